// The transport for buffers in CUDA device memory (see transport.h), over the devices' CudaApi
// (cuda/cuda_api.h): built in every build, run against the tests' fake where there is no GPU.
//
// A transfer is queued on the destination rank's CUDA stream: cudaMemcpyAsync (device to
// device) for a copy on one GPU, cudaMemcpyPeerAsync between GPUs; for a reduce, the sum kernel
// reads the source directly (same GPU, or a peer with peer access), or from a staging copy when
// the GPUs cannot reach each other. Every transfer is bracketed by two CUDA events. The step's
// barrier waits in settle(): it synchronizes every event before any rank goes on, and turns
// the event pairs into the transfers' times (start: when the host queued it; finish: start plus
// the GPU's elapsed time). publish() synchronizes the rank's stream, so that a rank never reads
// a buffer whose writer still has work in flight. The one-shot's slices are launched in
// settle() as ONE kernel over all of them, on rank 0's stream.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "virtualgpu/collectives/transport.h"

namespace mirrorlab::vgpu {

class Device;

std::unique_ptr<Transport> make_cuda_transport(const std::vector<Device*>& devices,
                                               std::vector<std::span<float>> buffers);

}  // namespace mirrorlab::vgpu
