// A fake CUDA runtime for tests on machines without a GPU (and tests/support/cuda/fake_nccl_api.h,
// NCCL's): the real code paths above CudaApi (the cudaMalloc allocator and its arena, the devices'
// streams, the CUDA transport and the one-shot) run against it.
//
// FakeCudaApi: GPU memory is host memory (handed out full of 0xFF bytes, so a block that is not
// zeroed shows), work runs when it is queued (each stream is in order; as if every stream ran at
// once), kernels run their work per element (collective_elements.h) over every index. Every call
// is recorded and checked as CUDA would: a stream used only between its creation and its
// destruction, and only while its GPU is current; an event recorded on a stream of its own GPU
// before it is waited for or timed; memory touched only inside live blocks, of the current GPU or
// a peer it was given access to; every block freed once, on the GPU it came from. What breaks a
// rule is a line in violations(); what is still alive at the end is in leaks().
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::testing {

class FakeCudaApi final : public vgpu::CudaApi {
 public:
  struct Options {
    int gpus = 1;
    std::size_t bytes_per_gpu = std::size_t{256} << 20;
    bool peer_access = true;  // every pair of GPUs can reach each other's memory...
    std::set<std::pair<int, int>> unreachable;  // ...but these (gpu, peer)
    int sm_count = 132;
    int runtime_version = 13000, driver_version = 13000;
    std::string why_no_gpu = "no CUDA-capable device is detected";  // with gpus = 0
  };
  FakeCudaApi() : FakeCudaApi(Options{}) {}
  explicit FakeCudaApi(Options options);
  ~FakeCudaApi() override;

  std::vector<std::string> calls() const;       // "launch_add gpu0 n=5", in order
  std::vector<std::string> violations() const;  // empty when every call kept CUDA's rules
  std::vector<std::string> leaks() const;       // blocks, streams, events still alive
  // leaks() but the device memory blocks: streams, events and pinned host blocks alive.
  std::vector<std::string> live_handles() const;
  // How many recorded calls start with `name`.
  int count(const std::string& name) const;
  // What each stream was given, in the order it was queued: "s<stream> <what>" ("s3 record_event
  // 7", "s3 wait_event 5", "s4 launch_add", "s3 sgd_update"), for tests of how streams wait for
  // each other. stream_id() is the fake's number of a stream (-1: never made here).
  std::vector<std::string> stream_calls() const;
  int stream_id(vgpu::GpuStream stream) const;
  // The next call whose name starts with `name` throws a CudaError (CUDA's error 2, out of
  // memory, for allocate: it returns nullptr instead, as cudaMalloc's failure does).
  void fail_next(const std::string& name);

  int runtime_version() override;
  int driver_version() override;
  int gpu_count(std::string* why_none) override;
  // "Fake GPU <ordinal>", bytes_per_gpu, sm_count, compute capability 9.0.
  vgpu::PhysicalGpu gpu_properties(int ordinal) override;
  std::size_t free_bytes() override;  // bytes_per_gpu less the current GPU's live blocks
  int current_gpu() override;
  void set_current_gpu(int ordinal) override;
  bool can_access_peer(int ordinal, int peer) override;
  void enable_peer_access(int peer) override;
  int sm_count(int ordinal) override;
  vgpu::CudaExecutionSet make_green_executions(int ordinal, int count,
                                               std::string* unavailable) override;

  void* allocate(std::size_t bytes) override;
  void release(void* block, int ordinal) noexcept override;
  void* allocate_async(std::size_t bytes, vgpu::GpuStream stream) override;
  void release_async(void* block, vgpu::GpuStream stream) override;
  void fill_bytes_async(void* dst, int value, std::size_t bytes, vgpu::GpuStream stream) override;
  void* allocate_pinned(std::size_t bytes) override;
  void release_pinned(void* block) noexcept override;
  void copy_async(void* dst, const void* src, std::size_t bytes, vgpu::CopyKind kind,
                  vgpu::GpuStream stream) override;
  void copy_peer_async(void* dst, int dst_gpu, const void* src, int src_gpu, std::size_t bytes,
                       vgpu::GpuStream stream) override;

  vgpu::GpuStream create_stream() override;
  void destroy_stream(vgpu::GpuStream stream) noexcept override;
  void synchronize_stream(vgpu::GpuStream stream) override;
  vgpu::GpuEvent create_event() override;
  void destroy_event(vgpu::GpuEvent event) noexcept override;
  void record_event(vgpu::GpuEvent event, vgpu::GpuStream stream) override;
  void wait_event(vgpu::GpuStream stream, vgpu::GpuEvent event) override;
  void synchronize_event(vgpu::GpuEvent event) override;
  float elapsed_ms(vgpu::GpuEvent start, vgpu::GpuEvent end) override;

  // A capture records each call's work and the memory it touches; a launch runs the work in
  // order and checks that memory is still alive (what a graph on freed memory would corrupt).
  void begin_capture(vgpu::GpuStream stream) override;
  vgpu::GpuGraph end_capture(vgpu::GpuStream stream) override;
  void launch_graph(vgpu::GpuGraph graph, vgpu::GpuStream stream) override;
  void destroy_graph(vgpu::GpuGraph graph) noexcept override;

  void launch_add(float* dst, const float* src, std::size_t n, vgpu::GpuStream stream,
                  int ordinal) override;
  void launch_copy(float* dst, const float* src, std::size_t n, vgpu::GpuStream stream,
                   int ordinal) override;
  void launch_scale(float* x, std::size_t n, float factor, vgpu::GpuStream stream,
                    int ordinal) override;
  void launch_one_shot(const vgpu::OneShotBuffers& buffers, std::size_t begin, std::size_t end,
                       vgpu::GpuStream stream, int ordinal) override;

  // For the other fakes (NCCL's, the model's): checks that [p, p + bytes) is device memory of GPU
  // `gpu` (or one it may reach), and that `stream` is live and on `gpu`; false (and a violation)
  // where not.
  bool check_device_range(const void* p, std::size_t bytes, int gpu, const std::string& what);
  bool check_stream_on(vgpu::GpuStream stream, int gpu, const std::string& what);
  // For the other fakes: a kernel's work, run now, or on a stream being captured kept for the
  // graph's launches (run then with this fake's lock held: `work` must not call the fake).
  void run_on(vgpu::GpuStream stream, std::function<void()> work);

 private:
  struct Block {
    int gpu;
    std::size_t bytes;
    bool stream_ordered;
  };
  struct StreamState {
    int gpu;
    bool live;
    int id;
  };
  struct EventState {
    int gpu;
    bool live, recorded;
    double at_ms;
    int id;
  };
  struct Range {
    const void* p;
    std::size_t bytes;
    int gpu;
    std::string what;
  };
  // The work a stream's capture has recorded, or a graph made of it.
  struct Recording {
    std::thread::id thread;  // the thread that captures (CUDA's thread-local mode)
    int gpu = 0, id = 0;
    bool live = true;
    std::vector<std::function<void()>> work;
    std::vector<Range> ranges;        // every block the work touches
    std::set<vgpu::GpuEvent> events;  // recorded during the capture
  };
  template <typename Op>
  void launch_pair(const char* name, Op op, float* dst, const float* src, std::size_t n,
                   vgpu::GpuStream stream, int ordinal);  // takes mutex_
  // All with mutex_ held.
  int current_locked() const;
  bool reachable(int gpu, int peer) const;  // the hardware lets `gpu` reach `peer`'s memory
  void call(const std::string& line);
  void violation(const std::string& line);
  void throw_if_failing(const std::string& name);
  StreamState* enqueue_on(vgpu::GpuStream stream,
                          const std::string& what);  // checks, advances time
  // `work` now, or into the stream's capture (mutex_ held).
  void run_locked(vgpu::GpuStream stream, std::function<void()> work);
  Recording* capture_of_this_thread();
  // CUDA refuses a host wait, an allocation or a free on a thread that captures.
  void refuse_while_capturing(const std::string& what);
  bool inside_block(const void* p, std::size_t bytes, int gpu, const std::string& what);
  void* new_block(std::size_t bytes, int gpu, bool stream_ordered);
  void free_block(void* block, int gpu, bool stream_ordered, const std::string& what);

  Options options_;
  mutable std::mutex mutex_;
  std::map<std::thread::id, int> current_;
  std::map<const void*, Block> blocks_;                             // live blocks by start
  std::map<const void*, std::unique_ptr<unsigned char[]>> pinned_;  // live pinned host blocks
  std::vector<std::size_t> used_;                                   // bytes per GPU
  std::map<vgpu::GpuStream, StreamState> streams_;
  std::map<vgpu::GpuEvent, EventState> events_;
  std::set<std::pair<int, int>> peers_enabled_;    // (gpu, peer)
  std::map<vgpu::GpuStream, Recording> captures_;  // streams being captured
  std::map<vgpu::GpuGraph, Recording> graphs_;
  std::vector<std::string> calls_, violations_, stream_calls_;
  std::multiset<std::string> failing_;
  int next_id_ = 1;
};

// CUDA devices made as the device registry makes them (an allocator and a stream each through
// the CudaApi, the device's thread on its GPU), over a fake: gpus[i] is device i's GPU.
class FakeCudaDevices {
 public:
  FakeCudaDevices(vgpu::CudaApi& api, const std::vector<int>& gpus,
                  std::size_t limit_bytes = std::size_t{64} << 20);
  ~FakeCudaDevices();  // the devices first, then the streams they use
  const std::vector<vgpu::Device*>& devices() const { return pointers_; }

 private:
  std::vector<std::unique_ptr<vgpu::CudaExecution>> executions_;
  std::vector<std::unique_ptr<vgpu::Device>> devices_;
  std::vector<vgpu::Device*> pointers_;
};

}  // namespace mirrorlab::testing
