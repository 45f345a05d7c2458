#include "tests/cuda_test_device.h"

#include <stdexcept>

#ifdef MIRRORLAB_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace mirrorlab::testing {

#ifdef MIRRORLAB_HAVE_CUDA
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("CUDA test device: ") + what + ": " +
                             cudaGetErrorString(err));
  }
}

// cudaMalloc blocks, zero-filled as the BlockAllocator contract asks.
class CudaTestAllocator final : public vgpu::BlockAllocator {
 public:
  void* allocate(std::size_t bytes) override {
    check(cudaSetDevice(0), "cudaSetDevice");
    void* ptr = nullptr;
    if (cudaMalloc(&ptr, bytes) != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky-free error so later calls do not see it
      return nullptr;
    }
    check(cudaMemset(ptr, 0, bytes), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaMemset (wait)");
    return ptr;
  }
  void release(void* ptr, std::size_t) noexcept override { (void)cudaFree(ptr); }
  bool host_accessible() const override { return false; }
};

}  // namespace

CudaTestDevices::CudaTestDevices(int count, std::size_t limit_mib) {
  int gpus = 0;
  check(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
  if (gpus == 0) throw std::runtime_error("CUDA test device: no GPU visible");
  check(cudaSetDevice(0), "cudaSetDevice");
  for (int i = 0; i < count; ++i) {
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    streams_.push_back(stream);
    owned_.push_back(
        std::make_unique<vgpu::Device>(i, vgpu::DeviceKind::kCudaLogicalGpu, limit_mib * vgpu::kMiB,
                                       std::make_unique<CudaTestAllocator>(), 0, stream));
    devices_.push_back(owned_.back().get());
  }
}

CudaTestDevices::~CudaTestDevices() {
  owned_.clear();
  for (void* s : streams_) (void)cudaStreamDestroy(static_cast<cudaStream_t>(s));
}

#else

CudaTestDevices::CudaTestDevices(int, std::size_t) {
  throw std::runtime_error("CUDA test device: this build has no CUDA");
}
CudaTestDevices::~CudaTestDevices() = default;

#endif

}  // namespace mirrorlab::testing
