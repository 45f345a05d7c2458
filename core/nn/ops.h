// The kernels of one device, behind one interface: every layer, the loss, the optimizers and the
// strategy's copies reach tensor data only through the Ops of the device they are bound to, so
// the same Sequential model runs on a CPU-backed virtual GPU (CpuOps) and on a CUDA GPU (CudaOps).
//
// Pointers handed to an Ops point into its device's memory (host memory for CpuOps, CUDA device
// memory for CudaOps) unless a parameter says "host". Work is enqueued in order on the device's
// stream: a CUDA call returns before the kernel has run, so host code may read results only after
// copy_to_host(), wait_loss_stats() or synchronize(). CpuOps runs everything at once, in the
// calling thread. The plain reference kernels are in kernels_cpu.h; CudaOps is tested against them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "virtualgpu/memory/clock.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::core {

struct LossStats;

// Per-step scalars of the Adam update (computed on the host in double, see optimizer.cpp):
//   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;  w -= lr_t * m / (sqrt(v) + eps)
struct AdamStep {
  float lr_t, beta1, beta2, epsilon;
};
// Nadam: m, v as Adam; m_bar = c_g * g * g_scale + c_m * m * m_scale;
//   w -= lr * m_bar / (sqrt(v * v_scale) + eps)
struct NadamStep {
  float lr, beta1, beta2, epsilon, g_scale, m_scale, v_scale, c_g, c_m;
};

// A point in a device's queue of work, for per-phase timing: CpuOps takes the host clock at once;
// CudaOps records a CUDA event on the stream, whose time is known once the work before it ran.
struct TimeMark {
  vgpu::TimePoint host{};      // when the mark was made on the host
  int event = -1;              // CudaOps: index of its event; -1 for CpuOps
  bool communication = false;  // CudaOps: an event of the communication stream's
};

class Ops {
 public:
  virtual ~Ops() = default;
  virtual const char* name() const = 0;  // "cpu", "cuda"
  // True when the device's memory is host memory (the host may dereference its pointers).
  virtual bool host_accessible() const = 0;

  // --- matrix products and layer kernels (see kernels_cpu.h for the exact semantics) ---------
  // Row-major C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C.
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc) = 0;
  virtual void broadcast_rows(const float* bias, int rows, int cols, float* out) = 0;
  virtual void column_sums(const float* dy, int rows, int cols, float* db) = 0;
  virtual void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols) = 0;
  virtual void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx) = 0;
  virtual void relu_forward(const float* x, std::size_t n, float* y) = 0;
  virtual void relu_backward(const float* x, const float* dy, std::size_t n, float* dx) = 0;
  virtual void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y,
                                    float* which) = 0;
  virtual void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w,
                                     int c, float* dx) = 0;

  // --- loss --------------------------------------------------------------------------------------
  // Softmax cross-entropy of `batch` rows of logits against labels (already checked to be below
  // `classes`, in device memory). grad (nullable) := (softmax - onehot) * grad_scale. The sums
  // land in *stats (host memory) by the time wait_loss_stats() returns; on CUDA they come back
  // asynchronously, so the host can keep enqueueing (the backward pass) before it waits.
  virtual void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch,
                                     int classes, float grad_scale, float* grad,
                                     LossStats* stats) = 0;
  // Waits for what is to come back: the loss sums, and find_nonfinite's answer.
  virtual void wait_loss_stats() = 0;

  // --- optimizer updates (velocity may be null: plain SGD) ---------------------------------------
  virtual void sgd_update(float* params, const float* grads, float* velocity, std::size_t n,
                          float lr, float momentum) = 0;
  virtual void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                           const AdamStep& step) = 0;
  virtual void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                            const NadamStep& step) = 0;

  // --- memory ------------------------------------------------------------------------------------
  virtual void copy(float* dst, const float* src, std::size_t n) = 0;  // within the device
  virtual void fill(float* dst, std::size_t n, float value) = 0;
  virtual void copy_to_device(void* dst, const void* host_src, std::size_t bytes) = 0;
  // Waits until the bytes are in host_dst (and so for all work enqueued before).
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void synchronize() = 0;  // waits for all work enqueued so far
  // Queues a copy of `bytes` of device memory into host memory the device writes on its own
  // (pinned, on CUDA) and returns that memory, to be read after the next synchronize(): a
  // read-back that shares the step's last wait. Valid until the next call. Where the host reads
  // device memory directly (a CPU-backed device), `src` itself, at once.
  virtual const void* read_back_async(const void* src, std::size_t /*bytes*/) { return src; }
  // The index of the first element of x[0, n) that is NaN or infinite, or n when all are finite.
  // Waits for the work before it (the answer comes back to the host).
  virtual std::size_t first_nonfinite(const float* x, std::size_t n) = 0;
  // The same search, its answer written to *at by the next wait_loss_stats() (or synchronize()):
  // on CUDA it comes back with the loss sums, in the same wait. Here: at once.
  virtual void find_nonfinite(const float* x, std::size_t n, std::size_t* at) {
    *at = first_nonfinite(x, n);
  }

  // --- a stretch of work captured once as a graph and launched again (CUDA) ---------------------
  // Whether this device can capture (CudaOps).
  virtual bool can_capture() const { return false; }
  // From here to end_capture(), the work queued is recorded, not run: meanwhile nothing may wait
  // for the device (no read-back waited for, no copy to the host, no synchronize) or allocate.
  virtual void begin_capture() {}
  // Ends the recording and queues it once: the results are those of the same calls uncaptured.
  // The graph is kept for replay(), the one before it dropped.
  virtual void end_capture() {}
  // Ends a capture that failed part way (nothing of it runs; nothing kept). Never throws.
  virtual void abort_capture() noexcept {}
  // Queues the kept graph again: the same kernels on the same memory, with the arguments they
  // were captured with. The read-backs it makes land in *stats and *at at the next wait, as the
  // captured calls' did in theirs. False, with nothing queued, when there is no graph, or when a
  // block of the device's memory has been given back since the capture (the graph may use it),
  // or the step's marks are not where they were at the capture.
  virtual bool replay(LossStats* stats, std::size_t* at) {
    (void)stats, (void)at;
    return false;
  }

  // --- a lane for collectives beside the compute (packs that overlap backward) ----------------
  // Gives the device a communication stream (CudaOps: a cudaStream_t of its GPU, which the
  // collectives use with PackFrame::communication_stream). A CPU-backed device's lane is a host
  // thread with nothing to order on a stream: these do nothing there.
  virtual void attach_communication_stream(void* stream) { (void)stream; }
  // The communication stream waits for the work queued here so far (the gradients backward has
  // written), on the GPU: the host does not wait.
  virtual void communication_waits_for_compute() {}
  // The work queued here next waits for everything queued on the communication stream so far
  // (the packs' all-reduces, before the update reads their sums).
  virtual void compute_waits_for_communication() {}
  // A mark on the communication stream, made from the lane's thread (CPU: the host's clock).
  virtual TimeMark mark_communication() { return mark(); }

  // --- per-phase timing ----------------------------------------------------------------------
  // Starts a new set of marks (CUDA: waits for the stream and anchors its events to the host
  // clock; call it where the device is idle anyway, at the start of a step).
  virtual void begin_marks() {}
  virtual TimeMark mark() { return TimeMark{vgpu::Clock::now(), -1}; }
  // When the work before the mark finished, on the host clock. CUDA: valid after a wait that
  // covers the mark (synchronize, copy_to_host).
  virtual vgpu::TimePoint time_of(const TimeMark& mark) { return mark.host; }
  // True when time_of() is only known later (CUDA): callers keep their marks until the step's
  // work has been waited for.
  virtual bool marks_deferred() const { return false; }
};

// The CPU kernels: stateless, shared by every CPU-backed device and by code that has no device.
Ops& cpu_ops();

}  // namespace mirrorlab::core
