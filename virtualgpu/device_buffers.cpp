#include "virtualgpu/device_buffers.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/cuda/cuda_runtime.h"
#include "virtualgpu/device.h"

#if MIRRORLAB_HAVE_CUDA
#include "virtualgpu/collective_kernels.h"
#include "virtualgpu/cuda/cuda_check.h"
#endif

namespace mirrorlab::vgpu {
namespace {

void check_sizes(std::size_t a, std::size_t b) {
  if (a != b) {
    throw std::invalid_argument("buffer of " + std::to_string(a) + " values but " +
                                std::to_string(b) + " given");
  }
}

[[maybe_unused]] std::invalid_argument no_cuda() {
  return std::invalid_argument(no_cuda_error("this device's memory is CUDA memory"));
}

// The CudaApi of a device whose memory is not host memory.
CudaApi& api_of(const Device& device) {
  if (device.cuda_api() == nullptr) throw no_cuda();
  return *device.cuda_api();
}

}  // namespace

void write_buffer(Device& device, std::span<float> dst, std::span<const float> values) {
  check_sizes(dst.size(), values.size());
  if (device.memory().host_accessible()) {
    std::copy(values.begin(), values.end(), dst.begin());
    return;
  }
  // On the device's stream, after its queued work; synchronous for the caller.
  CudaApi& api = api_of(device);
  CurrentGpu gpu(api, device.cuda_ordinal());
  api.copy_async(dst.data(), values.data(), values.size_bytes(), CopyKind::kHostToDevice,
                 device.cuda_stream());
  api.synchronize_stream(device.cuda_stream());
}

void read_buffer(Device& device, std::span<const float> src, std::span<float> out) {
  check_sizes(src.size(), out.size());
  if (device.memory().host_accessible()) {
    std::copy(src.begin(), src.end(), out.begin());
    return;
  }
  CudaApi& api = api_of(device);
  CurrentGpu gpu(api, device.cuda_ordinal());
  api.copy_async(out.data(), src.data(), src.size_bytes(), CopyKind::kDeviceToHost,
                 device.cuda_stream());
  api.synchronize_stream(device.cuda_stream());
}

int visible_cuda_gpus(std::string* reason) {
  const GpuInventory inventory = enumerate_gpus();  // never throws; says why when there is none
  if (inventory.gpus.empty()) *reason = inventory.unavailable_reason;
  return static_cast<int>(inventory.gpus.size());
}

double measure_cuda_stream_bandwidth(const std::vector<Device*>& devices, std::size_t bytes,
                                     int iterations, bool add) {
#if MIRRORLAB_HAVE_CUDA
  if (devices.empty() || iterations < 1 || bytes < 2 * sizeof(float)) {
    throw std::invalid_argument(
        "measuring the memory bandwidth needs devices, bytes and iterations");
  }
  const std::size_t count = bytes / 2 / sizeof(float);
  std::vector<Allocation> blocks;
  for (Device* d : devices) {
    blocks.push_back(d->memory().allocate(count * sizeof(float), "memory-bandwidth source"));
    blocks.push_back(d->memory().allocate(count * sizeof(float), "memory-bandwidth destination"));
  }
  // Devices on one GPU are timed together: the first one's stream starts them all (an event
  // they wait for) and waits for all of them (events it waits for), so its start and stop
  // events bracket every copy on that GPU, however the streams overlap.
  std::map<int, std::vector<std::size_t>> by_gpu;
  for (std::size_t i = 0; i < devices.size(); ++i) by_gpu[devices[i]->cuda_ordinal()].push_back(i);
  const auto stream_of = [&](std::size_t i) {
    return static_cast<cudaStream_t>(devices[i]->cuda_stream());
  };
  const auto copy_all = [&](int ordinal, const std::vector<std::size_t>& members) {
    for (std::size_t i : members) {
      float* dst = blocks[2 * i + 1].as<float>();
      const float* src = blocks[2 * i].as<float>();
      if (add)
        launch_add(dst, src, count, stream_of(i), ordinal);
      else
        launch_copy(dst, src, count, stream_of(i), ordinal);
    }
  };
  struct Timing {
    cudaEvent_t start = nullptr, stop = nullptr;
    std::vector<cudaEvent_t> joined;
  };
  std::map<int, Timing> timings;
  float slowest_ms = 0;
  std::string failure;
  int caller_gpu = 0;  // given back at the end: shared code leaves a thread's GPU as it was
  MIRRORLAB_CUDA_CHECK(cudaGetDevice(&caller_gpu));
  try {
    for (auto& [ordinal, members] : by_gpu) {
      MIRRORLAB_CUDA_CHECK(cudaSetDevice(ordinal));
      copy_all(ordinal, members);  // warm-up
      Timing& t = timings[ordinal];
      const cudaStream_t lead = stream_of(members.front());
      MIRRORLAB_CUDA_CHECK(cudaEventCreate(&t.start));
      MIRRORLAB_CUDA_CHECK(cudaEventCreate(&t.stop));
      for (std::size_t i : members) {
        if (stream_of(i) != lead) MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(stream_of(i)));
      }
      MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(lead));
      MIRRORLAB_CUDA_CHECK(cudaEventRecord(t.start, lead));
      for (std::size_t i : members) {
        if (stream_of(i) != lead)
          MIRRORLAB_CUDA_CHECK(cudaStreamWaitEvent(stream_of(i), t.start, 0));
      }
      for (int it = 0; it < iterations; ++it) copy_all(ordinal, members);
      for (std::size_t i : members) {
        if (stream_of(i) == lead) continue;
        cudaEvent_t joined = nullptr;
        MIRRORLAB_CUDA_CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
        t.joined.push_back(joined);
        MIRRORLAB_CUDA_CHECK(cudaEventRecord(joined, stream_of(i)));
        MIRRORLAB_CUDA_CHECK(cudaStreamWaitEvent(lead, joined, 0));
      }
      MIRRORLAB_CUDA_CHECK(cudaEventRecord(t.stop, lead));
    }
    for (auto& [ordinal, t] : timings) {
      MIRRORLAB_CUDA_CHECK(cudaSetDevice(ordinal));
      MIRRORLAB_CUDA_CHECK(cudaEventSynchronize(t.stop));
      float ms = 0;
      MIRRORLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, t.start, t.stop));
      slowest_ms = std::max(slowest_ms, ms);
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  for (auto& [ordinal, t] : timings) {
    for (cudaEvent_t e : t.joined) cudaEventDestroy(e);
    if (t.start) cudaEventDestroy(t.start);
    if (t.stop) cudaEventDestroy(t.stop);
  }
  for (Device* d : devices) cudaStreamSynchronize(static_cast<cudaStream_t>(d->cuda_stream()));
  (void)cudaSetDevice(caller_gpu);
  if (!failure.empty()) throw std::runtime_error(failure);
  if (!(slowest_ms > 0)) throw std::runtime_error("the bandwidth kernels took no measurable time");
  return (add ? 3.0 : 2.0) * static_cast<double>(count * sizeof(float)) *
         static_cast<double>(devices.size()) * iterations / (slowest_ms * 1e-3);
#else
  (void)devices, (void)bytes, (void)iterations, (void)add;
  throw std::invalid_argument(
      "measuring CUDA memory bandwidth needs a build with CUDA; this one has none");
#endif
}

}  // namespace mirrorlab::vgpu
