// make_cuda_executions (cuda_runtime.h) over a CudaApi: the same code on a GPU and against the
// tests' fake (no CUDA type here: built everywhere).
#include <memory>
#include <string>

#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/cuda/cuda_runtime.h"

namespace mirrorlab::vgpu {
namespace {

// A non-blocking stream on the GPU: it does not wait for the legacy default stream, so the
// logical GPUs' kernels can run side by side on the card.
class SharedSmExecution final : public CudaExecution {
 public:
  SharedSmExecution(CudaApi& api, int ordinal, int sm_count) : api_(api), sm_count_(sm_count) {
    CurrentGpu gpu(api_, ordinal);
    stream_ = api_.create_stream();
  }
  ~SharedSmExecution() override {
    if (stream_ != nullptr) api_.destroy_stream(stream_);
  }
  SharedSmExecution(const SharedSmExecution&) = delete;
  SharedSmExecution& operator=(const SharedSmExecution&) = delete;
  void* stream() const override { return stream_; }
  int sm_count() const override { return sm_count_; }
  bool own_sms() const override { return false; }

 private:
  CudaApi& api_;
  GpuStream stream_ = nullptr;
  int sm_count_;
};

}  // namespace

CudaExecutionSet make_cuda_executions(CudaApi& api, int ordinal, int count, bool sm_split) {
  const int sms = api.sm_count(ordinal);
  CudaExecutionSet set;
  std::string unavailable;
  if (sm_split) {
    set = api.make_green_executions(ordinal, count, &unavailable);
    if (!set.devices.empty()) return set;
  }
  for (int i = 0; i < count; ++i) {
    set.devices.push_back(std::make_unique<SharedSmExecution>(api, ordinal, sms));
  }
  const std::string shared =
      "the devices share all " + std::to_string(sms) + " SMs of GPU:" + std::to_string(ordinal);
  set.sm_note = sm_split ? "an SM split is not available: " + unavailable + "; " + shared : shared;
  return set;
}

}  // namespace mirrorlab::vgpu
