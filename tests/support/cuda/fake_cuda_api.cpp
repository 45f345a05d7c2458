// The fakes of tests/support/cuda/fake_cuda_api.h.
#include "tests/support/cuda/fake_cuda_api.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "virtualgpu/devices/collective_elements.h"

namespace mirrorlab::testing {
namespace {

std::string ptr_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

void* handle(int id) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x10000 + id)); }

}  // namespace

// ---- FakeCudaApi: bookkeeping -----------------------------------------------------------------
FakeCudaApi::FakeCudaApi(Options options)
    : options_(options), used_(static_cast<std::size_t>(options.gpus), 0) {}

FakeCudaApi::~FakeCudaApi() {
  for (auto& [start, block] : blocks_) std::free(const_cast<void*>(start));
}

std::vector<std::string> FakeCudaApi::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::vector<std::string> FakeCudaApi::violations() const {
  std::lock_guard lock(mutex_);
  return violations_;
}

std::vector<std::string> FakeCudaApi::leaks() const {
  std::vector<std::string> left;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [start, block] : blocks_) {
      left.push_back("block " + ptr_text(start) + " of " + std::to_string(block.bytes) +
                     " bytes on GPU " + std::to_string(block.gpu));
    }
  }
  const std::vector<std::string> handles = live_handles();
  left.insert(left.end(), handles.begin(), handles.end());
  return left;
}

std::vector<std::string> FakeCudaApi::live_handles() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> left;
  for (const auto& [start, block] : pinned_) {
    left.push_back("pinned host block " + ptr_text(start));
  }
  for (const auto& [s, state] : streams_) {
    if (state.live) left.push_back("stream " + std::to_string(state.id));
  }
  for (const auto& [e, state] : events_) {
    if (state.live) left.push_back("event " + std::to_string(state.id));
  }
  for (const auto& [g, state] : graphs_) {
    if (state.live) left.push_back("graph " + std::to_string(state.id));
  }
  for (const auto& [stream, capture] : captures_) {
    left.push_back("a capture of stream " + std::to_string(capture.id) + " never ended");
  }
  return left;
}

int FakeCudaApi::count(const std::string& name) const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(std::count_if(calls_.begin(), calls_.end(), [&](const std::string& c) {
    return c.compare(0, name.size(), name) == 0;
  }));
}

void FakeCudaApi::fail_next(const std::string& name) {
  std::lock_guard lock(mutex_);
  failing_.insert(name);
}

int FakeCudaApi::current_locked() const {
  const auto found = current_.find(std::this_thread::get_id());
  return found == current_.end() ? 0 : found->second;
}

void FakeCudaApi::call(const std::string& line) { calls_.push_back(line); }
void FakeCudaApi::violation(const std::string& line) { violations_.push_back(line); }

void FakeCudaApi::throw_if_failing(const std::string& name) {
  for (auto it = failing_.begin(); it != failing_.end(); ++it) {
    if (name.compare(0, it->size(), *it) == 0) {
      failing_.erase(it);
      throw vgpu::CudaError(999, name + " failed: the fake was told to fail it");
    }
  }
}

FakeCudaApi::StreamState* FakeCudaApi::enqueue_on(vgpu::GpuStream stream, const std::string& what) {
  const auto found = streams_.find(stream);
  if (found == streams_.end()) {
    violation(what + " on a stream never created");
    return nullptr;
  }
  StreamState& s = found->second;
  stream_calls_.push_back("s" + std::to_string(s.id) + " " + what);
  if (!s.live) violation(what + " on stream " + std::to_string(s.id) + " after it was destroyed");
  const int current = current_locked();
  if (s.gpu != current) {
    violation(what + " on stream " + std::to_string(s.id) + " of GPU " + std::to_string(s.gpu) +
              " while GPU " + std::to_string(current) + " is current");
  }
  return &s;
}

bool FakeCudaApi::inside_block(const void* p, std::size_t bytes, int gpu, const std::string& what) {
  if (Recording* capture = capture_of_this_thread()) {
    capture->ranges.push_back(Range{p, bytes, gpu, what});
  }
  const auto* byte = static_cast<const unsigned char*>(p);
  auto it = blocks_.upper_bound(p);
  if (it != blocks_.begin()) {
    --it;
    const auto* start = static_cast<const unsigned char*>(it->first);
    if (byte >= start && byte + bytes <= start + it->second.bytes) {
      const int owner = it->second.gpu;
      if (owner != gpu && !peers_enabled_.count({gpu, owner})) {
        violation(what + " on GPU " + std::to_string(gpu) + " touches GPU " +
                  std::to_string(owner) + "'s memory without peer access");
      }
      return true;
    }
  }
  violation(what + " touches " + std::to_string(bytes) + " bytes at " + ptr_text(p) +
            " that no live block holds");
  return false;
}

void* FakeCudaApi::new_block(std::size_t bytes, int gpu, bool stream_ordered) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256;
  void* block = std::aligned_alloc(256, rounded);
  if (block == nullptr) throw std::bad_alloc();
  std::memset(block, 0xFF, rounded);  // NaN as floats: a block not zeroed shows
  blocks_[block] = Block{gpu, bytes, stream_ordered};
  used_[static_cast<std::size_t>(gpu)] += bytes;
  return block;
}

void FakeCudaApi::free_block(void* block, int gpu, bool stream_ordered, const std::string& what) {
  const auto found = blocks_.find(block);
  if (found == blocks_.end()) {
    violation(what + " of " + ptr_text(block) + ", which is not a live block (freed twice?)");
    return;
  }
  if (found->second.gpu != gpu) {
    violation(what + " on GPU " + std::to_string(gpu) + " of a block allocated on GPU " +
              std::to_string(found->second.gpu));
  }
  if (found->second.stream_ordered != stream_ordered) {
    violation(what + " of a block allocated " +
              (found->second.stream_ordered ? "stream-ordered" : "with cudaMalloc"));
  }
  used_[static_cast<std::size_t>(found->second.gpu)] -= found->second.bytes;
  std::free(block);
  blocks_.erase(found);
}

// ---- FakeCudaApi: GPUs ------------------------------------------------------------------------
int FakeCudaApi::runtime_version() { return options_.runtime_version; }
int FakeCudaApi::driver_version() { return options_.driver_version; }

int FakeCudaApi::gpu_count(std::string* why_none) {
  std::lock_guard lock(mutex_);
  call("gpu_count");
  if (options_.gpus == 0) *why_none = options_.why_no_gpu;
  return options_.gpus;
}

vgpu::PhysicalGpu FakeCudaApi::gpu_properties(int ordinal) {
  std::lock_guard lock(mutex_);
  call("gpu_properties " + std::to_string(ordinal));
  throw_if_failing("gpu_properties");
  if (ordinal < 0 || ordinal >= options_.gpus) {
    throw vgpu::CudaError(
        101, "cudaGetDeviceProperties(" + std::to_string(ordinal) + "): invalid device ordinal");
  }
  vgpu::PhysicalGpu gpu;
  gpu.ordinal = ordinal;
  gpu.name = "Fake GPU " + std::to_string(ordinal);
  gpu.total_bytes = options_.bytes_per_gpu;
  gpu.sm_count = options_.sm_count;
  gpu.compute_major = 9;
  return gpu;
}

std::size_t FakeCudaApi::free_bytes() {
  std::lock_guard lock(mutex_);
  const int gpu = current_locked();
  call("free_bytes gpu" + std::to_string(gpu));
  return options_.bytes_per_gpu - used_[static_cast<std::size_t>(gpu)];
}

int FakeCudaApi::current_gpu() {
  std::lock_guard lock(mutex_);
  return current_locked();
}

void FakeCudaApi::set_current_gpu(int ordinal) {
  std::lock_guard lock(mutex_);
  if (ordinal < 0 || ordinal >= options_.gpus) {
    throw vgpu::CudaError(101, "cudaSetDevice(" + std::to_string(ordinal) +
                                   "): invalid device ordinal (the fake has " +
                                   std::to_string(options_.gpus) + " GPUs)");
  }
  current_[std::this_thread::get_id()] = ordinal;
}

bool FakeCudaApi::reachable(int gpu, int peer) const {
  return options_.peer_access && gpu != peer && options_.unreachable.count({gpu, peer}) == 0;
}

bool FakeCudaApi::can_access_peer(int ordinal, int peer) {
  std::lock_guard lock(mutex_);
  call("can_access_peer " + std::to_string(ordinal) + " " + std::to_string(peer));
  return reachable(ordinal, peer);
}

void FakeCudaApi::enable_peer_access(int peer) {
  std::lock_guard lock(mutex_);
  const int gpu = current_locked();
  call("enable_peer_access gpu" + std::to_string(gpu) + " peer" + std::to_string(peer));
  if (!reachable(gpu, peer)) {
    violation("enable_peer_access from GPU " + std::to_string(gpu) + " to " + std::to_string(peer) +
              ", which it cannot reach");
  }
  peers_enabled_.insert({gpu, peer});
}

int FakeCudaApi::sm_count(int /*ordinal*/) { return options_.sm_count; }

vgpu::CudaExecutionSet FakeCudaApi::make_green_executions(int, int, std::string* unavailable) {
  *unavailable = "the fake CUDA runtime has no green contexts";
  return {};
}

// ---- FakeCudaApi: memory ----------------------------------------------------------------------
void* FakeCudaApi::allocate(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const int gpu = current_locked();
  call("allocate gpu" + std::to_string(gpu) + " " + std::to_string(bytes));
  refuse_while_capturing("allocate");
  if (failing_.erase("allocate") > 0) return nullptr;
  if (used_[static_cast<std::size_t>(gpu)] + bytes > options_.bytes_per_gpu) return nullptr;
  return new_block(bytes, gpu, false);
}

void FakeCudaApi::release(void* block, int ordinal) noexcept {
  std::lock_guard lock(mutex_);
  call("release gpu" + std::to_string(ordinal));
  refuse_while_capturing("release");
  free_block(block, ordinal, false, "release");
}

void* FakeCudaApi::allocate_async(std::size_t bytes, vgpu::GpuStream stream) {
  std::lock_guard lock(mutex_);
  call("allocate_async " + std::to_string(bytes));
  throw_if_failing("allocate_async");
  StreamState* s = enqueue_on(stream, "allocate_async");
  return new_block(bytes, s != nullptr ? s->gpu : current_locked(), true);
}

void FakeCudaApi::release_async(void* block, vgpu::GpuStream stream) {
  std::lock_guard lock(mutex_);
  call("release_async");
  StreamState* s = enqueue_on(stream, "release_async");
  free_block(block, s != nullptr ? s->gpu : current_locked(), true, "release_async");
}

void* FakeCudaApi::allocate_pinned(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  call("allocate_pinned " + std::to_string(bytes));
  refuse_while_capturing("allocate_pinned");
  throw_if_failing("allocate_pinned");
  auto block = std::make_unique<unsigned char[]>(std::max<std::size_t>(bytes, 1));
  std::memset(block.get(), 0xFF, bytes);
  void* start = block.get();
  pinned_.emplace(start, std::move(block));
  return start;
}

void FakeCudaApi::release_pinned(void* block) noexcept {
  std::lock_guard lock(mutex_);
  call("release_pinned");
  refuse_while_capturing("release_pinned");
  if (pinned_.erase(block) == 0) {
    violation("release_pinned of " + ptr_text(block) + ": not a live pinned block");
  }
}

void FakeCudaApi::fill_bytes_async(void* dst, int value, std::size_t bytes,
                                   vgpu::GpuStream stream) {
  std::lock_guard lock(mutex_);
  call("fill_bytes_async " + std::to_string(bytes));
  throw_if_failing("fill_bytes_async");
  enqueue_on(stream, "fill_bytes_async");
  if (inside_block(dst, bytes, current_locked(), "fill_bytes_async"))
    run_locked(stream, [=] { std::memset(dst, value, bytes); });
}

void FakeCudaApi::copy_async(void* dst, const void* src, std::size_t bytes, vgpu::CopyKind kind,
                             vgpu::GpuStream stream) {
  std::lock_guard lock(mutex_);
  call("copy_async " + std::to_string(bytes));
  throw_if_failing("copy_async");
  enqueue_on(stream, "copy_async");
  const int gpu = current_locked();
  bool ok = true;
  if (kind != vgpu::CopyKind::kHostToDevice)
    ok = inside_block(src, bytes, gpu, "copy_async (source)") && ok;
  if (kind != vgpu::CopyKind::kDeviceToHost)
    ok = inside_block(dst, bytes, gpu, "copy_async (destination)") && ok;
  if (ok) run_locked(stream, [=] { std::memmove(dst, src, bytes); });
}

void FakeCudaApi::copy_peer_async(void* dst, int dst_gpu, const void* src, int src_gpu,
                                  std::size_t bytes, vgpu::GpuStream stream) {
  std::lock_guard lock(mutex_);
  call("copy_peer_async gpu" + std::to_string(src_gpu) + "->gpu" + std::to_string(dst_gpu) + " " +
       std::to_string(bytes));
  enqueue_on(stream, "copy_peer_async");
  // A peer copy may cross GPUs without peer access (the driver stages it): each side is checked
  // on its own GPU.
  const bool ok = inside_block(src, bytes, src_gpu, "copy_peer_async (source)") &&
                  inside_block(dst, bytes, dst_gpu, "copy_peer_async (destination)");
  if (ok) run_locked(stream, [=] { std::memmove(dst, src, bytes); });
}

// ---- FakeCudaApi: streams and events ----------------------------------------------------------
vgpu::GpuStream FakeCudaApi::create_stream() {
  std::lock_guard lock(mutex_);
  throw_if_failing("create_stream");
  const int id = next_id_++;
  const int gpu = current_locked();
  call("create_stream " + std::to_string(id) + " gpu" + std::to_string(gpu));
  streams_[handle(id)] = StreamState{gpu, true, id};
  return handle(id);
}

void FakeCudaApi::destroy_stream(vgpu::GpuStream stream) noexcept {
  std::lock_guard lock(mutex_);
  const auto found = streams_.find(stream);
  if (found == streams_.end() || !found->second.live) {
    violation("destroy_stream of a stream that is not alive");
    return;
  }
  call("destroy_stream " + std::to_string(found->second.id));
  found->second.live = false;
}

void FakeCudaApi::synchronize_stream(vgpu::GpuStream stream) {
  std::lock_guard lock(mutex_);
  throw_if_failing("synchronize_stream");
  refuse_while_capturing("synchronize_stream");
  const auto found = streams_.find(stream);
  if (found == streams_.end() || !found->second.live) {
    violation("synchronize_stream of a stream that is not alive");
    return;
  }
  call("synchronize_stream " + std::to_string(found->second.id));
}

vgpu::GpuEvent FakeCudaApi::create_event() {
  std::lock_guard lock(mutex_);
  throw_if_failing("create_event");
  const int id = next_id_++;
  events_[handle(id)] = EventState{current_locked(), true, false, 0.0, id};
  return handle(id);
}

void FakeCudaApi::destroy_event(vgpu::GpuEvent event) noexcept {
  std::lock_guard lock(mutex_);
  const auto found = events_.find(event);
  if (found == events_.end() || !found->second.live) {
    violation("destroy_event of an event that is not alive");
    return;
  }
  found->second.live = false;
}

void FakeCudaApi::record_event(vgpu::GpuEvent event, vgpu::GpuStream stream) {
  std::lock_guard lock(mutex_);
  const auto found = events_.find(event);
  if (found == events_.end() || !found->second.live) {
    violation("record_event of an event that is not alive");
    return;
  }
  throw_if_failing("record_event");
  StreamState* s = enqueue_on(stream, "record_event " + std::to_string(found->second.id));
  if (s != nullptr && s->gpu != found->second.gpu) {
    violation("record_event: event " + std::to_string(found->second.id) + " of GPU " +
              std::to_string(found->second.gpu) + " on a stream of GPU " + std::to_string(s->gpu));
  }
  call("record_event " + std::to_string(found->second.id));
  if (Recording* capture = capture_of_this_thread()) capture->events.insert(event);
  // Work runs when it is queued, so an event is reached when it is recorded: its time is the
  // host's then (a GPU's time between two events is never more than the host saw pass).
  EventState* state = &found->second;
  run_locked(stream, [state] {
    state->recorded = true;
    state->at_ms = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
  });
}

void FakeCudaApi::wait_event(vgpu::GpuStream stream, vgpu::GpuEvent event) {
  std::lock_guard lock(mutex_);
  const auto found = events_.find(event);
  const Recording* capture = capture_of_this_thread();
  if (found == events_.end() || !found->second.live ||
      !(found->second.recorded || (capture != nullptr && capture->events.count(event) > 0))) {
    violation("wait_event of an event never recorded (or not alive)");
    return;
  }
  enqueue_on(stream, "wait_event " + std::to_string(found->second.id));
  call("wait_event " + std::to_string(found->second.id));
}

void FakeCudaApi::synchronize_event(vgpu::GpuEvent event) {
  std::lock_guard lock(mutex_);
  throw_if_failing("synchronize_event");
  refuse_while_capturing("synchronize_event");
  const auto found = events_.find(event);
  if (found == events_.end() || !found->second.live || !found->second.recorded) {
    violation("synchronize_event of an event never recorded (or not alive)");
    return;
  }
  call("synchronize_event " + std::to_string(found->second.id));
}

float FakeCudaApi::elapsed_ms(vgpu::GpuEvent start, vgpu::GpuEvent end) {
  std::lock_guard lock(mutex_);
  const auto a = events_.find(start), b = events_.find(end);
  if (a == events_.end() || b == events_.end() || !a->second.recorded || !b->second.recorded) {
    violation("elapsed_ms of an event never recorded");
    // What cudaEventElapsedTime says then.
    throw vgpu::CudaError(400,
                          "cudaEventElapsedTime: invalid resource handle (the fake's "
                          "event was never recorded)");
  }
  return static_cast<float>(b->second.at_ms - a->second.at_ms);
}

// ---- FakeCudaApi: kernels ---------------------------------------------------------------------
// A kernel that reads src and writes dst, both n floats of GPU `ordinal`, on `stream`.
template <typename Op>
void FakeCudaApi::launch_pair(const char* name, Op op, float* dst, const float* src, std::size_t n,
                              vgpu::GpuStream stream, int ordinal) {
  std::lock_guard lock(mutex_);
  const std::string what(name);
  call(what + " gpu" + std::to_string(ordinal) + " n=" + std::to_string(n));
  enqueue_on(stream, what);
  if (ordinal != current_locked())
    violation(what + " for GPU " + std::to_string(ordinal) + " while another is current");
  const bool ok = inside_block(dst, n * sizeof(float), ordinal, what + " (dst)") &&
                  inside_block(src, n * sizeof(float), ordinal, what + " (src)");
  if (ok) {
    run_locked(stream, [=] {
      for (std::size_t i = 0; i < n; ++i) vgpu::elementwise_at(op, dst, src, i);
    });
  }
}

void FakeCudaApi::launch_add(float* dst, const float* src, std::size_t n, vgpu::GpuStream stream,
                             int ordinal) {
  launch_pair("launch_add", vgpu::AddOp{}, dst, src, n, stream, ordinal);
}

void FakeCudaApi::launch_copy(float* dst, const float* src, std::size_t n, vgpu::GpuStream stream,
                              int ordinal) {
  launch_pair("launch_copy", vgpu::CopyOp{}, dst, src, n, stream, ordinal);
}

void FakeCudaApi::launch_scale(float* x, std::size_t n, float factor, vgpu::GpuStream stream,
                               int ordinal) {
  std::lock_guard lock(mutex_);
  call("launch_scale gpu" + std::to_string(ordinal) + " n=" + std::to_string(n));
  enqueue_on(stream, "launch_scale");
  if (inside_block(x, n * sizeof(float), ordinal, "launch_scale")) {
    run_locked(stream, [=] {
      for (std::size_t i = 0; i < n; ++i) vgpu::elementwise_at(vgpu::ScaleOp{factor}, x, x, i);
    });
  }
}

void FakeCudaApi::launch_one_shot(const vgpu::OneShotBuffers& buffers, std::size_t begin,
                                  std::size_t end, vgpu::GpuStream stream, int ordinal) {
  std::lock_guard lock(mutex_);
  call("launch_one_shot gpu" + std::to_string(ordinal) + " ranks=" + std::to_string(buffers.n) +
       " [" + std::to_string(begin) + "," + std::to_string(end) + ")");
  enqueue_on(stream, "launch_one_shot");
  if (vgpu::one_shot_table_entry(buffers.n) < 0) {
    violation("launch_one_shot of " + std::to_string(buffers.n) + " ranks");
    return;
  }
  bool ok = true;
  for (int r = 0; r < buffers.n; ++r) {
    ok = inside_block(buffers.data[r] + begin, (end - begin) * sizeof(float), ordinal,
                      "launch_one_shot (rank " + std::to_string(r) + ")") &&
         ok;
  }
  if (!ok) return;
  vgpu::OneShotBuffers from_begin = buffers;
  for (int r = 0; r < buffers.n; ++r) from_begin.data[r] = buffers.data[r] + begin;
  run_locked(stream, [=] {
    for (std::size_t i = 0; i < end - begin; ++i) vgpu::one_shot_at<0>(from_begin, i);
  });
}

// ---- FakeCudaApi: graphs ----------------------------------------------------------------------
FakeCudaApi::Recording* FakeCudaApi::capture_of_this_thread() {
  for (auto& [stream, capture] : captures_) {
    if (capture.thread == std::this_thread::get_id()) return &capture;
  }
  return nullptr;
}

void FakeCudaApi::refuse_while_capturing(const std::string& what) {
  if (const Recording* capture = capture_of_this_thread()) {
    violation(what + " while this thread captures stream " + std::to_string(capture->id) +
              " (CUDA refuses it in a capture)");
  }
}

void FakeCudaApi::run_locked(vgpu::GpuStream stream, std::function<void()> work) {
  const auto capture = captures_.find(stream);
  if (capture == captures_.end()) {
    work();
    return;
  }
  if (capture->second.thread != std::this_thread::get_id()) {
    violation("work queued on stream " + std::to_string(capture->second.id) +
              " from another thread than the one that captures it");
  }
  capture->second.work.push_back(std::move(work));
}

void FakeCudaApi::run_on(vgpu::GpuStream stream, std::function<void()> work) {
  std::lock_guard lock(mutex_);
  run_locked(stream, std::move(work));
}

void FakeCudaApi::begin_capture(vgpu::GpuStream stream) {
  std::lock_guard lock(mutex_);
  throw_if_failing("begin_capture");
  StreamState* s = enqueue_on(stream, "begin_capture");
  if (s == nullptr) return;
  call("begin_capture " + std::to_string(s->id));
  if (captures_.count(stream) > 0 || capture_of_this_thread() != nullptr) {
    violation("begin_capture of stream " + std::to_string(s->id) + " while a capture is open");
    return;
  }
  Recording capture;
  capture.thread = std::this_thread::get_id();
  capture.gpu = s->gpu;
  capture.id = s->id;
  captures_.emplace(stream, std::move(capture));
}

vgpu::GpuGraph FakeCudaApi::end_capture(vgpu::GpuStream stream) {
  std::lock_guard lock(mutex_);
  const auto found = captures_.find(stream);
  if (found == captures_.end()) {
    violation("end_capture of a stream not being captured");
    throw vgpu::CudaError(901, "cudaStreamEndCapture: the stream is not capturing");
  }
  Recording graph = std::move(found->second);
  captures_.erase(found);
  call("end_capture " + std::to_string(graph.id) + " (" + std::to_string(graph.work.size()) +
       " calls)");
  throw_if_failing("end_capture");
  graph.id = next_id_++;
  vgpu::GpuGraph handle_of_graph = handle(graph.id);
  graphs_.emplace(handle_of_graph, std::move(graph));
  return handle_of_graph;
}

void FakeCudaApi::launch_graph(vgpu::GpuGraph graph, vgpu::GpuStream stream) {
  std::lock_guard lock(mutex_);
  throw_if_failing("launch_graph");
  const auto found = graphs_.find(graph);
  if (found == graphs_.end() || !found->second.live) {
    violation("launch_graph of a graph that is not alive");
    return;
  }
  StreamState* s = enqueue_on(stream, "launch_graph");
  call("launch_graph " + std::to_string(found->second.id));
  if (s != nullptr && s->gpu != found->second.gpu) {
    violation("launch_graph of a graph of GPU " + std::to_string(found->second.gpu) +
              " on a stream of GPU " + std::to_string(s->gpu));
  }
  bool ok = true;
  for (const Range& r : found->second.ranges) {
    ok = inside_block(r.p, r.bytes, r.gpu, "launch_graph: " + r.what) && ok;
  }
  if (!ok) return;  // a real graph would write into freed memory
  if (capture_of_this_thread() != nullptr) {
    violation("launch_graph while this thread captures (a graph inside a graph)");
    return;
  }
  for (const std::function<void()>& work : found->second.work) work();
}

void FakeCudaApi::destroy_graph(vgpu::GpuGraph graph) noexcept {
  std::lock_guard lock(mutex_);
  const auto found = graphs_.find(graph);
  if (found == graphs_.end() || !found->second.live) {
    violation("destroy_graph of a graph that is not alive");
    return;
  }
  call("destroy_graph " + std::to_string(found->second.id));
  found->second.live = false;
  found->second.work.clear();
}

bool FakeCudaApi::check_device_range(const void* p, std::size_t bytes, int gpu,
                                     const std::string& what) {
  std::lock_guard lock(mutex_);
  return inside_block(p, bytes, gpu, what);
}

bool FakeCudaApi::check_stream_on(vgpu::GpuStream stream, int gpu, const std::string& what) {
  std::lock_guard lock(mutex_);
  const auto found = streams_.find(stream);
  if (found == streams_.end() || !found->second.live) {
    violation(what + " on a stream that is not alive");
    return false;
  }
  if (found->second.gpu != gpu) {
    violation(what + " on a stream of GPU " + std::to_string(found->second.gpu) + ", not of GPU " +
              std::to_string(gpu));
    return false;
  }
  stream_calls_.push_back("s" + std::to_string(found->second.id) + " " + what);
  return true;
}

std::vector<std::string> FakeCudaApi::stream_calls() const {
  std::lock_guard lock(mutex_);
  return stream_calls_;
}

int FakeCudaApi::stream_id(vgpu::GpuStream stream) const {
  std::lock_guard lock(mutex_);
  const auto found = streams_.find(stream);
  return found == streams_.end() ? -1 : found->second.id;
}

// ---- FakeCudaDevices --------------------------------------------------------------------------
FakeCudaDevices::FakeCudaDevices(vgpu::CudaApi& api, const std::vector<int>& gpus,
                                 std::size_t limit_bytes) {
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const int gpu = gpus[i];
    vgpu::CudaExecutionSet set = vgpu::make_cuda_executions(api, gpu, 1, false);
    executions_.push_back(std::move(set.devices.front()));
    const auto kind = std::count(gpus.begin(), gpus.end(), gpu) > 1
                          ? vgpu::DeviceKind::kCudaLogicalGpu
                          : vgpu::DeviceKind::kCudaPhysicalGpu;
    devices_.push_back(std::make_unique<vgpu::Device>(static_cast<int>(i), kind, limit_bytes,
                                                      vgpu::make_cuda_allocator(api, gpu), gpu,
                                                      executions_.back()->stream(), &api));
    devices_.back()->stream().enqueue([&api, gpu] { api.set_current_gpu(gpu); });
    pointers_.push_back(devices_.back().get());
  }
  for (vgpu::Device* d : pointers_) d->stream().synchronize();
}

FakeCudaDevices::~FakeCudaDevices() {
  devices_.clear();
  executions_.clear();
}

}  // namespace mirrorlab::testing
