#include "tests/support/cuda/cuda_test_kernels.h"
#include "virtualgpu/cuda/cuda_check.h"

namespace mirrorlab::testing {
namespace {

__global__ void handshake_kernel(volatile int* flags, int which, int* saw_other,
                                 long long max_cycles) {
  flags[which] = 1;
  __threadfence();
  const long long start = clock64();
  int seen = 0;
  while (clock64() - start < max_cycles) {
    if (flags[1 - which] != 0) {
      seen = 1;
      break;
    }
  }
  *saw_other = seen;
}

__global__ void record_sm_ids_kernel(unsigned* sm_ids, long long spin_cycles) {
  if (threadIdx.x != 0) return;
  unsigned sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  const long long start = clock64();
  while (clock64() - start < spin_cycles) {
  }
  sm_ids[blockIdx.x] = sm;
}

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

void launch_handshake(void* stream, int* flags, int which, int* saw_other, long long max_cycles) {
  handshake_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flags, which, saw_other,
                                                                   max_cycles);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

void launch_record_sm_ids(void* stream, unsigned* sm_ids, int blocks, long long spin_cycles) {
  record_sm_ids_kernel<<<blocks, 32, 0, static_cast<cudaStream_t>(stream)>>>(sm_ids, spin_cycles);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

void launch_spin(void* stream, long long cycles) {
  spin_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(cycles);
  MIRRORLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace mirrorlab::testing
