// The BlockAllocator of CUDA devices (cuda_runtime.h: make_cuda_allocator), over a CudaApi, so
// it is the same code on a GPU and against the tests' fake (no CUDA type here: built everywhere).
#include <memory>

#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/cuda/cuda_runtime.h"

namespace mirrorlab::vgpu {
namespace {

class CudaAllocator final : public BlockAllocator {
 public:
  CudaAllocator(CudaApi& api, int ordinal) : api_(api), ordinal_(ordinal) {
    CurrentGpu gpu(api_, ordinal_);
    zero_stream_ = api_.create_stream();
  }
  ~CudaAllocator() override {
    if (zero_stream_ != nullptr) api_.destroy_stream(zero_stream_);
  }
  CudaAllocator(const CudaAllocator&) = delete;
  CudaAllocator& operator=(const CudaAllocator&) = delete;

  void* allocate(std::size_t bytes) override {
    CurrentGpu gpu(api_, ordinal_);
    void* block = api_.allocate(bytes);    // 256-byte aligned
    if (block == nullptr) return nullptr;  // the card is full: the arena's out-of-memory error
    // Zeroed on a stream of our own, and waited for: a plain cudaMemset runs on the legacy
    // default stream, which the devices' non-blocking streams do not wait for, so a kernel could
    // read the block before it is zero.
    try {
      api_.fill_bytes_async(block, 0, bytes, zero_stream_);
      api_.synchronize_stream(zero_stream_);
    } catch (...) {
      api_.release(block, ordinal_);
      throw;
    }
    return block;
  }

  // cudaFree waits for the whole device to be idle: arenas should hold blocks across steps. It
  // runs with the block's GPU current, so that the wait is for that GPU's work.
  void release(void* block, std::size_t /*bytes*/) noexcept override {
    api_.release(block, ordinal_);
  }

  bool host_accessible() const override { return false; }
  std::string exhausted() const override { return gpu_memory_exhausted(ordinal_); }
  MemoryRanOut ran_out() const override { return MemoryRanOut::kGpu; }

 private:
  CudaApi& api_;
  int ordinal_;
  GpuStream zero_stream_ = nullptr;
};

}  // namespace

std::unique_ptr<BlockAllocator> make_cuda_allocator(CudaApi& api, int ordinal) {
  return std::make_unique<CudaAllocator>(api, ordinal);
}

}  // namespace mirrorlab::vgpu
