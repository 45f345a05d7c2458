// process_cuda_api(): the runtime's CudaApi completed with the collectives' kernels (CUDA
// builds), or the refusal of a build without CUDA; and this process's GPUs.
#include "virtualgpu/devices/process_cuda_api.h"

#include "virtualgpu/cuda/gpu_inventory.h"

#if MIRRORLAB_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "virtualgpu/cuda/counting_cuda_api.h"
#include "virtualgpu/cuda/cuda_api_runtime.h"
#include "virtualgpu/devices/collective_kernels.h"
#endif

namespace mirrorlab::vgpu {

#if MIRRORLAB_HAVE_CUDA
namespace {

class ProcessCudaApi final : public RuntimeCudaApi {
 public:
  void launch_add(float* dst, const float* src, std::size_t n, GpuStream stream,
                  int ordinal) override {
    vgpu::launch_add(dst, src, n, static_cast<cudaStream_t>(stream), ordinal);
  }
  void launch_copy(float* dst, const float* src, std::size_t n, GpuStream stream,
                   int ordinal) override {
    vgpu::launch_copy(dst, src, n, static_cast<cudaStream_t>(stream), ordinal);
  }
  void launch_scale(float* x, std::size_t n, float factor, GpuStream stream, int ordinal) override {
    vgpu::launch_scale(x, n, factor, static_cast<cudaStream_t>(stream), ordinal);
  }
  void launch_one_shot(const OneShotBuffers& buffers, std::size_t begin, std::size_t end,
                       GpuStream stream, int ordinal) override {
    vgpu::launch_one_shot(buffers, begin, end, static_cast<cudaStream_t>(stream), ordinal);
  }
};

}  // namespace

CudaApi& process_cuda_api() {
  static ProcessCudaApi api;
  static CountingCudaApi counted(api, process_gpu_work_counts());  // what a step asks of the GPU
  return counted;
}

GpuInventory enumerate_gpus() { return enumerate_gpus(process_cuda_api()); }
#else
CudaApi& process_cuda_api() { throw CudaError(0, no_cuda_error("the CUDA runtime was asked for")); }

GpuInventory enumerate_gpus() {
  GpuInventory inventory;
  inventory.unavailable_reason = "no CUDA GPU visible (" + cuda_build_description() + ")";
  return inventory;
}
#endif

}  // namespace mirrorlab::vgpu
