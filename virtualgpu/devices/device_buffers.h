// Moving values between the host and a device's buffer, whatever memory it is (host memory for
// a CPU-backed virtual GPU, CUDA memory for a CUDA device), and measuring the copy bandwidth of
// CUDA devices' memory with a copy kernel. No CUDA in this header: callers need no #ifdefs.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace mirrorlab::vgpu {

class Device;

// dst (a buffer of `device`) := values; complete on return. Sizes must match.
void write_buffer(Device& device, std::span<float> dst, std::span<const float> values);
// out := src (a buffer of `device`), once the device's queued work on it is done.
void read_buffer(Device& device, std::span<const float> src, std::span<float> out);

// How many CUDA GPUs are visible; 0 with a sentence in *reason when none is (no driver, no GPU,
// or a build without CUDA). Never throws.
int visible_cuda_gpus(std::string* reason);

// Memory bandwidth (bytes read plus written per second) of the CUDA devices: every device runs
// the copy kernel (b = a) or, with `add`, the add kernel (b += a) over two halves of `bytes` of
// its own, all at once, `iterations` times, timed with CUDA events per GPU (bytes / the slowest
// GPU's time). Throws std::invalid_argument for devices that are not CUDA devices of one CudaApi
// (so in a build without CUDA), CudaError when a call fails (every stream synchronized first).
// cuda_stream_bandwidth.cpp, over the devices' CudaApi.
double measure_cuda_stream_bandwidth(const std::vector<Device*>& devices, std::size_t bytes,
                                     int iterations, bool add);

}  // namespace mirrorlab::vgpu
