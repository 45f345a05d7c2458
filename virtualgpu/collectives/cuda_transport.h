// The transport for buffers in CUDA device memory (see transport.h), over the devices' CudaApi
// (cuda/cuda_api.h): built in every build, run against the tests' fake where there is no GPU.
//
// A transfer is queued on the destination rank's CUDA stream: cudaMemcpyAsync (device to
// device) for a copy on one GPU, cudaMemcpyPeerAsync between GPUs; for a reduce, the sum kernel
// reads the source directly (same GPU, or a peer with peer access), or from a staging copy when
// the GPUs cannot reach each other. The one-shot's slices are launched in settle() as ONE kernel
// over all of them, on rank 0's stream.
//
// The host never waits for the GPU in an untimed all-reduce: the streams wait for each other.
// Each rank's stream records its "ready" event after its gradients (publish) and after each of
// its transfers; a transfer first makes its stream wait for the source's ready event (what it
// reads is written) and, once a step, for the ready events of the ranks that read its buffer in
// the steps before (what it overwrites is read). The events come from the devices' pools, made
// once. The update that follows on each stream is in order behind its all-reduce.
//
// Timed (`timed`: the group has an observer, as the window's stepping does), every transfer is
// bracketed by two pooled events too, and settle() waits for them before any rank goes on, to
// give the transfers their times (start: when the host queued it; finish: start plus the GPU's
// elapsed time).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "virtualgpu/collectives/transport.h"

namespace mirrorlab::vgpu {

class Device;

// `communication_streams`: the transfers go on the devices' communication streams
// (Device::communication_cuda_stream), not their own (PackFrame::communication_stream).
std::unique_ptr<Transport> make_cuda_transport(const std::vector<Device*>& devices,
                                               std::vector<std::span<float>> buffers, bool timed,
                                               bool communication_streams = false);

}  // namespace mirrorlab::vgpu
