// measure_cuda_stream_bandwidth (device_buffers.h), written over the devices' CudaApi: built in
// every build, run against the fake CUDA runtime in tests/virtualgpu/test_cuda_paths.cpp, and on a
// GPU by the runtime's CudaApi.
#include <algorithm>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/devices/device.h"
#include "virtualgpu/devices/device_buffers.h"

namespace mirrorlab::vgpu {
namespace {

// The start and stop events of one GPU's devices, and the events that join its other streams
// to the first one's.
struct GpuTiming {
  GpuTiming(CudaApi& api, int gpu) : ordinal(gpu), start(api), stop(api) {}
  int ordinal;
  ApiEvent start, stop;
  std::vector<ApiEvent> joined;
};

}  // namespace

double measure_cuda_stream_bandwidth(const std::vector<Device*>& devices, std::size_t bytes,
                                     int iterations, bool add) {
  if (devices.empty() || iterations < 1 || bytes < 2 * sizeof(float)) {
    throw std::invalid_argument(
        "measuring the memory bandwidth needs devices, bytes and iterations");
  }
  for (const Device* d : devices) {
    if (d->cuda_api() != devices[0]->cuda_api() || d->cuda_api() == nullptr) {
      throw std::invalid_argument(
          "measuring the CUDA memory bandwidth needs CUDA devices, all made with one CUDA runtime");
    }
  }
  CudaApi& api = *devices[0]->cuda_api();
  const std::size_t count = bytes / 2 / sizeof(float);
  std::vector<Allocation> blocks;  // source and destination of each device
  for (Device* d : devices) {
    blocks.push_back(d->memory().allocate(count * sizeof(float), "memory-bandwidth source"));
    blocks.push_back(d->memory().allocate(count * sizeof(float), "memory-bandwidth destination"));
  }
  // Devices on one GPU are timed together: the first one's stream starts them all (an event
  // they wait for) and waits for all of them (events it waits for), so its start and stop
  // events bracket every kernel on that GPU, however the streams overlap.
  std::map<int, std::vector<std::size_t>> by_gpu;
  for (std::size_t i = 0; i < devices.size(); ++i) by_gpu[devices[i]->cuda_ordinal()].push_back(i);
  const auto stream_of = [&](std::size_t i) { return devices[i]->cuda_stream(); };
  const auto run_all = [&](int ordinal, const std::vector<std::size_t>& members) {
    for (const std::size_t i : members) {
      float* dst = blocks[2 * i + 1].as<float>();
      const float* src = blocks[2 * i].as<float>();
      if (add) {
        api.launch_add(dst, src, count, stream_of(i), ordinal);
      } else {
        api.launch_copy(dst, src, count, stream_of(i), ordinal);
      }
    }
  };
  std::vector<std::unique_ptr<GpuTiming>> timings;
  float slowest_ms = 0;
  std::exception_ptr failure;
  try {
    for (const auto& [ordinal, members] : by_gpu) {
      CurrentGpu current(api, ordinal);
      run_all(ordinal, members);  // warm-up
      timings.push_back(std::make_unique<GpuTiming>(api, ordinal));
      GpuTiming& t = *timings.back();
      const GpuStream lead = stream_of(members.front());
      for (const std::size_t i : members) api.synchronize_stream(stream_of(i));
      api.record_event(t.start.get(), lead);
      for (const std::size_t i : members) {
        if (stream_of(i) != lead) api.wait_event(stream_of(i), t.start.get());
      }
      for (int it = 0; it < iterations; ++it) run_all(ordinal, members);
      for (const std::size_t i : members) {
        if (stream_of(i) == lead) continue;
        t.joined.emplace_back(api);
        api.record_event(t.joined.back().get(), stream_of(i));
        api.wait_event(lead, t.joined.back().get());
      }
      api.record_event(t.stop.get(), lead);
    }
    for (const auto& t : timings) {
      CurrentGpu current(api, t->ordinal);
      api.synchronize_event(t->stop.get());
      slowest_ms = std::max(slowest_ms, api.elapsed_ms(t->start.get(), t->stop.get()));
    }
  } catch (...) {
    failure = std::current_exception();
  }
  // Nothing may still run on the blocks when they are given back, whatever failed.
  for (Device* d : devices) {
    try {
      api.synchronize_stream(d->cuda_stream());
    } catch (...) {
    }
  }
  if (failure) std::rethrow_exception(failure);
  if (!(slowest_ms > 0)) throw std::runtime_error("the bandwidth kernels took no measurable time");
  return (add ? 3.0 : 2.0) * static_cast<double>(count * sizeof(float)) *
         static_cast<double>(devices.size()) * iterations / (slowest_ms * 1e-3);
}

}  // namespace mirrorlab::vgpu
