// CudaOps: the Ops of one CUDA GPU (physical, or a logical GPU carved from one). Everything goes
// on the device's stream: the model's kernels and cuBLAS, whose handle is bound to that stream,
// so one replica's work is one in-order queue and nothing waits for the host. Packs that overlap
// backward add the device's communication stream beside it, ordered against it by two events
// (the lane waits for the gradients, the update for the sums), with phase marks of its own.
//
// The host waits only where it must read: the loss sums (copied into pinned memory and waited
// for late, once per step), copies to the host, synchronize(), and the anchor of the phase
// marks at the start of a step (when the stream is idle anyway). Scratch (cuBLAS's vector of
// ones, the loss rows) is taken from the device's arena and only ever grows, so a steady run
// allocates nothing per step.
//
// Written over the runtime's CudaApi and the model's GpuModelApi (gpu_model_api.h), with no
// CUDA call of its own: built in every build, and run against the tests' fakes where no GPU is.
//
// Index
//   1. CudaOps: setup, matrix products, layer kernels, loss, optimizers, memory, timing
//   2. Factory
#include "core/nn/cuda/ops_cuda.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/nn/cuda/gpu_model_api.h"
#include "core/nn/loss.h"

namespace mirrorlab::core {

namespace {

// Grows `block` to at least `bytes` from `arena`; never shrinks, so once a run has seen its
// largest batch no call allocates. (Giving a block back is a cudaFree, which waits for the GPU:
// safe for work still reading it, and rare.)
void grow(vgpu::Allocation& block, vgpu::MemoryArena& arena, std::size_t bytes, const char* what) {
  if (block.bytes() >= bytes) return;
  block.reset();
  block = arena.allocate(bytes, what);
}

// ---------------------------------------------------------------------------------------------
// 1. CudaOps
// ---------------------------------------------------------------------------------------------
class CudaOps final : public Ops {
 public:
  CudaOps(vgpu::CudaApi& api, GpuModelApi& model, int ordinal, vgpu::GpuStream stream,
          vgpu::MemoryArena& arena)
      : api_(api), model_(model), ordinal_(ordinal), stream_(stream), arena_(&arena) {
    try {
      use_device();
      blas_ = model_.create_blas(stream_);
      pinned_ = static_cast<ReadBack*>(api_.allocate_pinned(sizeof(ReadBack)));
      read_back_ready_ = api_.create_event();
      anchor_ = api_.create_event();
      device_read_back_ = arena.allocate(sizeof(ReadBack), "loss sums and NaN search");
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaOps() override { release(); }
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  const char* name() const override { return "cuda"; }
  bool host_accessible() const override { return false; }

  // --- matrix products -------------------------------------------------------------------------
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) override {
    if (m <= 0 || n <= 0) return;
    use_device();
    if (k <= 0) {
      // An empty sum (an empty shard's weight gradient): C = beta * C, as the CPU gemm.
      model_.scale_matrix(c, m, n, ldc, beta, stream_);
      return;
    }
    // cuBLAS is column-major. A row-major matrix with row stride ld is the column-major
    // transpose with leading dimension ld, so row-major C = op(A) op(B) is column-major
    // C^T = op(B)^T op(A)^T: swap the operands and m with n; the transpose flags stay.
    model_.sgemm(blas_, trans_b, trans_a, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
  }

  void column_sums(const float* dy, int rows, int cols, float* db) override {
    if (cols <= 0) return;
    use_device();
    if (rows <= 0) {
      model_.fill(db, static_cast<std::size_t>(cols), 0.0f, stream_);
      return;
    }
    ensure_ones(rows);
    // dy, row-major [rows, cols], is column-major [cols, rows] with leading dimension cols:
    // db = that matrix times a vector of ones (cuBLAS's reduction, deterministic).
    model_.sgemv(blas_, cols, rows, 1.0f, dy, cols, ones_.as<float>(), 0.0f, db);
  }

  // --- layer kernels ---------------------------------------------------------------------------
  void broadcast_rows(const float* bias, int rows, int cols, float* out) override {
    use_device();
    model_.broadcast_rows(bias, rows, cols, out, stream_);
  }
  void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols) override {
    use_device();
    model_.im2col_3x3(x, batch, h, w, c, cols, stream_);
  }
  void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx) override {
    use_device();
    model_.col2im_3x3(dcols, batch, h, w, c, dx, stream_);
  }
  void relu_forward(const float* x, std::size_t n, float* y) override {
    use_device();
    model_.relu_forward(x, n, y, stream_);
  }
  void relu_backward(const float* x, const float* dy, std::size_t n, float* dx) override {
    use_device();
    model_.relu_backward(x, dy, n, dx, stream_);
  }
  void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y,
                            float* which) override {
    use_device();
    model_.max_pool_2x2_forward(x, batch, h, w, c, y, which, stream_);
  }
  void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                             float* dx) override {
    use_device();
    model_.max_pool_2x2_backward(dy, which, batch, h, w, c, dx, stream_);
  }

  // --- loss --------------------------------------------------------------------------------------
  void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch,
                             int classes, float grad_scale, float* grad,
                             LossStats* stats) override {
    use_device();
    if (pending_stats_ != nullptr) wait_loss_stats();  // the pinned slot holds one call's sums
    grow(loss_rows_, *arena_, sizeof(LossRow) * static_cast<std::size_t>(batch > 0 ? batch : 1),
         "loss rows");
    model_.softmax_cross_entropy(logits, labels, batch, classes, grad_scale, grad,
                                 loss_rows_.as<LossRow>(), &device_read_back()->sums, stream_);
    read_back(&ReadBack::sums, sizeof(LossSums));
    pending_stats_ = stats;
    pending_count_ = batch;
  }

  // One host wait for everything queued to come back (the loss sums, the search for a NaN). A
  // wait that fails forgets what it was to fill: the caller has the error, and what it passed in
  // (first_nonfinite's answer lives on its stack) may be gone before the next wait.
  void wait_loss_stats() override {
    if (pending_stats_ == nullptr && pending_at_ == nullptr) return;
    try {
      use_device();
      api_.synchronize_event(read_back_ready_);
    } catch (...) {
      pending_stats_ = nullptr;
      pending_at_ = nullptr;
      throw;
    }
    take_read_backs();
  }
  // The read-backs' values, once a wait has covered their copies.
  void take_read_backs() {
    if (LossStats* out = std::exchange(pending_stats_, nullptr)) {
      out->loss_sum = pinned_->sums.loss_sum;
      out->correct = pinned_->sums.correct;
      out->correct_top5 = pinned_->sums.correct_top5;
      out->count = pending_count_;
    }
    if (std::size_t* at = std::exchange(pending_at_, nullptr)) {
      *at = static_cast<std::size_t>(pinned_->first_nonfinite);
    }
  }

  void find_nonfinite(const float* x, std::size_t n, std::size_t* at) override {
    if (n == 0) {
      *at = 0;
      return;
    }
    use_device();
    if (pending_at_ != nullptr) wait_loss_stats();  // one search in flight at a time
    model_.find_nonfinite(x, n, &device_read_back()->first_nonfinite, stream_);
    read_back(&ReadBack::first_nonfinite, sizeof(unsigned long long));
    pending_at_ = at;
  }

  // --- optimizers --------------------------------------------------------------------------------
  void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                  float momentum) override {
    use_device();
    model_.sgd_update(params, grads, velocity, n, lr, momentum, stream_);
  }
  void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                   const AdamStep& step) override {
    use_device();
    model_.adam_update(params, grads, m, v, n, step, stream_);
  }
  void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                    const NadamStep& step) override {
    use_device();
    model_.nadam_update(params, grads, m, v, n, step, stream_);
  }

  // --- memory ------------------------------------------------------------------------------------
  void copy(float* dst, const float* src, std::size_t n) override {
    if (n == 0) return;
    use_device();
    api_.copy_async(dst, src, n * sizeof(float), vgpu::CopyKind::kDeviceToDevice, stream_);
  }
  void fill(float* dst, std::size_t n, float value) override {
    use_device();
    model_.fill(dst, n, value, stream_);
  }
  std::size_t first_nonfinite(const float* x, std::size_t n) override {
    searched_ = n;
    find_nonfinite(x, n, &searched_);
    wait_loss_stats();
    return searched_;
  }
  // From pageable host memory (every caller's std::vector) cudaMemcpyAsync returns once the
  // bytes are staged, so the caller may reuse its buffer at once and the host does not wait for
  // the GPU. (From pinned memory it would return before reading: not used that way.)
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override {
    if (bytes == 0) return;
    use_device();
    api_.copy_async(dst, host_src, bytes, vgpu::CopyKind::kHostToDevice, stream_);
  }
  // The one call that may come from another replica's thread: the step recorder reads every
  // replica's gradients from the thread that ends an all-reduce step, while the others are
  // parked. So it leaves that thread's current GPU as it found it (on physical GPUs it differs).
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    vgpu::CurrentGpu gpu(api_, ordinal_);
    api_.copy_async(host_dst, src, bytes, vgpu::CopyKind::kDeviceToHost, stream_);
    api_.synchronize_stream(stream_);
  }
  const void* read_back_async(const void* src, std::size_t bytes) override {
    if (bytes == 0) return nullptr;
    use_device();
    if (host_copy_bytes_ < bytes) {      // grows only: a steady run allocates nothing
      api_.synchronize_stream(stream_);  // an earlier read-back may still write the old block
      if (host_copy_ != nullptr) api_.release_pinned(host_copy_);
      host_copy_ = nullptr;
      host_copy_bytes_ = 0;
      host_copy_ = api_.allocate_pinned(bytes);
      host_copy_bytes_ = bytes;
    }
    api_.copy_async(host_copy_, src, bytes, vgpu::CopyKind::kDeviceToHost, stream_);
    return host_copy_;
  }
  void synchronize() override {
    use_device();
    api_.synchronize_stream(stream_);
    take_read_backs();  // the wait covered their copies: no second one
  }

  // --- graphs ------------------------------------------------------------------------------------
  // What a graph needs besides its GPU work: the marks it records (their events' indices), the
  // read-backs it leaves pending, and the memory it was captured on.
  bool can_capture() const override { return true; }
  void begin_capture() override {
    use_device();
    if (pending_stats_ != nullptr || pending_at_ != nullptr) wait_loss_stats();
    drop_graph();
    if (!anchored_) begin_marks();  // the anchor's wait cannot be inside the capture
    capture_.first_mark = next_mark_;
    api_.begin_capture(stream_);
    capturing_ = true;
  }
  void end_capture() override {
    capturing_ = false;
    use_device();
    graph_ = api_.end_capture(stream_);
    capture_.last_mark = next_mark_;
    capture_.stats = pending_stats_ != nullptr;
    capture_.count = pending_count_;
    capture_.at = pending_at_ != nullptr;
    capture_.given_back = arena_->blocks_given_back();
    api_.launch_graph(graph_, stream_);
  }
  void abort_capture() noexcept override {
    if (!capturing_) return;
    capturing_ = false;
    pending_stats_ = nullptr;  // nothing of the capture ran: nothing comes back
    pending_at_ = nullptr;
    try {
      use_device();
      api_.destroy_graph(api_.end_capture(stream_));
    } catch (...) {  // a capture CUDA invalidated ends with an error: the stream is free again
    }
  }
  bool replay(LossStats* stats, std::size_t* at) override {
    if (graph_ == nullptr || arena_->blocks_given_back() != capture_.given_back ||
        next_mark_ != capture_.first_mark || capture_.last_mark > marks_.size()) {
      return false;
    }
    use_device();
    if (pending_stats_ != nullptr || pending_at_ != nullptr) wait_loss_stats();
    api_.launch_graph(graph_, stream_);
    next_mark_ = capture_.last_mark;
    pending_stats_ = capture_.stats ? stats : nullptr;
    pending_count_ = capture_.count;
    pending_at_ = capture_.at ? at : nullptr;
    return true;
  }

  // --- timing ------------------------------------------------------------------------------------
  // The anchor ties the stream's clock to the host's: recorded on an idle stream and waited for,
  // its host time is known to within the wait's latency (microseconds). Every mark of the step is
  // then anchor's host time + the milliseconds from anchor to mark, read after the step.
  // A wait, so made again only every kAnchorSteps steps, not every step: the two clocks drift
  // apart by parts per million, microseconds over the seconds that many steps take. Counted in
  // steps, not seconds, so that a step asks the same of the GPU however slow the machine (a
  // sanitizer's build) and the counts can be pinned.
  void begin_marks() override {
    next_mark_ = 0;
    next_communication_mark_ = 0;
    if (anchored_ && ++steps_since_anchor_ < kAnchorSteps) return;
    steps_since_anchor_ = 0;
    use_device();
    api_.record_event(anchor_, stream_);
    api_.synchronize_event(anchor_);
    anchor_host_ = vgpu::Clock::now();
    anchored_ = true;
  }
  TimeMark mark() override {
    if (!anchored_) begin_marks();
    use_device();
    if (next_mark_ == marks_.size()) {
      // Events are made once and reused every step (made lazily: a step has a dozen marks).
      marks_.push_back(api_.create_event());
    }
    api_.record_event(marks_[next_mark_], stream_);
    return TimeMark{vgpu::Clock::now(), static_cast<int>(next_mark_++)};
  }
  vgpu::TimePoint time_of(const TimeMark& mark) override {
    const std::vector<vgpu::GpuEvent>& marks = mark.communication ? communication_marks_ : marks_;
    const std::size_t made = mark.communication ? next_communication_mark_ : next_mark_;
    if (mark.event < 0 || static_cast<std::size_t>(mark.event) >= made) return mark.host;
    use_device();
    // Both streams are on this GPU: the anchor's clock times the communication stream's events.
    const float ms = api_.elapsed_ms(anchor_, marks[static_cast<std::size_t>(mark.event)]);
    return anchor_host_ + std::chrono::duration_cast<vgpu::Clock::duration>(
                              std::chrono::duration<double, std::milli>(ms));
  }
  bool marks_deferred() const override { return true; }

  // --- the communication stream --------------------------------------------------------------
  // One event each way, made here and recorded again for every pack: a stream's wait takes the
  // event as last recorded when the wait is queued.
  void attach_communication_stream(void* stream) override {
    if (stream == nullptr || communication_ != nullptr) return;
    use_device();
    fork_ = api_.create_event();
    join_ = api_.create_event();
    communication_ = stream;
  }
  void communication_waits_for_compute() override {
    if (communication_ == nullptr) return;
    use_device();
    api_.record_event(fork_, stream_);
    api_.wait_event(communication_, fork_);
  }
  void compute_waits_for_communication() override {
    if (communication_ == nullptr) return;
    use_device();
    api_.record_event(join_, communication_);
    api_.wait_event(stream_, join_);
  }
  // On the lane's thread, while the compute thread makes its own marks: its own events.
  TimeMark mark_communication() override {
    if (communication_ == nullptr) return mark();
    use_device();
    if (next_communication_mark_ == communication_marks_.size()) {
      communication_marks_.push_back(api_.create_event());
    }
    api_.record_event(communication_marks_[next_communication_mark_], communication_);
    return TimeMark{vgpu::Clock::now(), static_cast<int>(next_communication_mark_++), true};
  }

 private:
  using LossRow = elements::LossRow;
  using LossSums = elements::LossSums;
  // What comes back to the host in a step, in one block of pinned memory (and its twin on the
  // GPU): a truly asynchronous copy each, one event, one wait for both.
  struct ReadBack {
    LossSums sums;
    unsigned long long first_nonfinite;
  };

  ReadBack* device_read_back() { return device_read_back_.as<ReadBack>(); }
  // Queues the copy of one field of the GPU's ReadBack into the pinned one, and marks the point
  // the next wait covers.
  template <typename Field>
  void read_back(Field ReadBack::*field, std::size_t bytes) {
    api_.copy_async(&(pinned_->*field), &(device_read_back()->*field), bytes,
                    vgpu::CopyKind::kDeviceToHost, stream_);
    api_.record_event(read_back_ready_, stream_);
  }

  static constexpr int kAnchorSteps = 100;

  struct Capture {
    std::size_t first_mark = 0, last_mark = 0;  // the marks the graph records: [first, last)
    bool stats = false, at = false;             // read-backs it leaves pending
    int count = 0;                              // the loss's examples
    std::uint64_t given_back = 0;               // the arena's count at the capture
  };
  void drop_graph() noexcept {
    if (graph_ != nullptr) api_.destroy_graph(graph_);
    graph_ = nullptr;
  }

  void use_device() { api_.set_current_gpu(ordinal_); }

  void ensure_ones(int rows) {
    if (ones_count_ >= rows) return;
    ones_count_ = 0;  // until the ones are there: a grow that throws leaves no block behind
    grow(ones_, *arena_, sizeof(float) * static_cast<std::size_t>(rows), "column-sum ones");
    model_.fill(ones_.as<float>(), static_cast<std::size_t>(rows), 1.0f, stream_);
    ones_count_ = rows;
  }

  // Frees what the constructor made, in any state; errors are ignored (nothing to do about them
  // in a destructor, and a failed constructor reports its own).
  void release() noexcept {
    abort_capture();  // a stream being captured cannot be waited for
    try {
      use_device();
      api_.synchronize_stream(stream_);  // nothing may still write into pinned_
      if (communication_ != nullptr) api_.synchronize_stream(communication_);
    } catch (...) {
    }
    drop_graph();
    for (vgpu::GpuEvent e : marks_) api_.destroy_event(e);
    marks_.clear();
    for (vgpu::GpuEvent e : communication_marks_) api_.destroy_event(e);
    communication_marks_.clear();
    if (fork_ != nullptr) api_.destroy_event(fork_);
    if (join_ != nullptr) api_.destroy_event(join_);
    fork_ = join_ = nullptr;
    communication_ = nullptr;  // the device's, not ours
    if (anchor_ != nullptr) api_.destroy_event(anchor_);
    if (read_back_ready_ != nullptr) api_.destroy_event(read_back_ready_);
    if (pinned_ != nullptr) api_.release_pinned(pinned_);
    if (host_copy_ != nullptr) api_.release_pinned(host_copy_);
    host_copy_ = nullptr;
    if (blas_ != nullptr) model_.destroy_blas(blas_);
    anchor_ = read_back_ready_ = nullptr;
    pinned_ = nullptr;
    blas_ = nullptr;
  }

  vgpu::CudaApi& api_;
  GpuModelApi& model_;
  int ordinal_;
  vgpu::GpuStream stream_;
  vgpu::MemoryArena* arena_;
  BlasHandle blas_ = nullptr;
  vgpu::Allocation ones_;
  int ones_count_ = 0;
  vgpu::Allocation loss_rows_, device_read_back_;
  ReadBack* pinned_ = nullptr;
  vgpu::GpuEvent read_back_ready_ = nullptr;
  LossStats* pending_stats_ = nullptr;
  int pending_count_ = 0;
  std::size_t* pending_at_ = nullptr;
  std::size_t searched_ = 0;   // first_nonfinite's answer, filled by the wait
  void* host_copy_ = nullptr;  // read_back_async's pinned block
  std::size_t host_copy_bytes_ = 0;
  vgpu::GpuEvent anchor_ = nullptr;
  vgpu::TimePoint anchor_host_{};
  bool anchored_ = false;
  int steps_since_anchor_ = 0;
  std::vector<vgpu::GpuEvent> marks_;
  std::size_t next_mark_ = 0;
  vgpu::GpuStream communication_ = nullptr;  // attach_communication_stream's, or none
  vgpu::GpuEvent fork_ = nullptr, join_ = nullptr;
  std::vector<vgpu::GpuEvent> communication_marks_;
  std::size_t next_communication_mark_ = 0;
  vgpu::GpuGraph graph_ = nullptr;
  Capture capture_;
  bool capturing_ = false;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// 2. Factory
// ---------------------------------------------------------------------------------------------
std::unique_ptr<Ops> make_cuda_ops(vgpu::CudaApi& api, GpuModelApi& model, int ordinal,
                                   vgpu::GpuStream stream, vgpu::MemoryArena& arena) {
  if (ordinal < 0) {
    throw std::invalid_argument("make_cuda_ops: a CUDA device needs a GPU ordinal >= 0");
  }
  return std::make_unique<CudaOps>(api, model, ordinal, stream, arena);
}

}  // namespace mirrorlab::core
