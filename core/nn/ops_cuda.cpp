// CudaOps: the Ops of one CUDA GPU (physical, or a logical GPU carved from one). Everything goes
// on the device's stream: the kernels of kernels_cuda_*.cu and cuBLAS, whose handle is bound to
// that stream, so one replica's work is one in-order queue and nothing waits for the host.
//
// The host waits only where it must read: the loss sums (copied into pinned memory and waited
// for late, once per step), copies to the host, synchronize(), and the anchor of the phase
// marks at the start of a step (when the stream is idle anyway). Scratch (cuBLAS's vector of
// ones, the loss rows) is taken from the device's arena and only ever grows, so a steady run
// allocates nothing per step.
//
// No kernel is defined here (they are in kernels_cuda_*.cu, launched through kernels_cuda.h), so
// the host compiler builds this file.
//
// Index
//   1. Errors
//   2. CudaOps: setup, matrix products, layer kernels, loss, optimizers, memory, timing
//   3. Factory and visibility
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/nn/cublas_check.h"
#include "core/nn/kernels_cuda.h"
#include "core/nn/loss.h"
#include "core/nn/ops_cuda.h"

namespace mirrorlab::core {

// ---------------------------------------------------------------------------------------------
// 1. Errors
// ---------------------------------------------------------------------------------------------
void throw_cublas_error(cublasStatus_t status, const char* expression, const char* file,
                        int line) {
  throw vgpu::CudaError(static_cast<int>(status),
                        std::string(expression) + " failed at " + file + ":" +
                            std::to_string(line) + ": " + cublasGetStatusString(status) + " (" +
                            cublasGetStatusName(status) + ")");
}

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
// 2. CudaOps
// ---------------------------------------------------------------------------------------------
class CudaOps final : public Ops {
 public:
  CudaOps(int ordinal, cudaStream_t stream, vgpu::MemoryArena& arena)
      : ordinal_(ordinal), stream_(stream), arena_(&arena) {
    try {
      use_device();
      MIRRORLAB_CUBLAS_CHECK(cublasCreate(&blas_));
      // All of cuBLAS's work for this device goes on the device's stream, in order with the
      // kernels: no implicit synchronisation with the legacy default stream.
      MIRRORLAB_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
      // Full FP32: TF32 tensor cores would be faster but round the inputs to 10 mantissa bits,
      // far outside the 1e-4 agreement with the CPU reference.
      MIRRORLAB_CUBLAS_CHECK(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));
      MIRRORLAB_CUBLAS_CHECK(cublasSetPointerMode(blas_, CUBLAS_POINTER_MODE_HOST));
      MIRRORLAB_CUDA_CHECK(
          cudaMallocHost(reinterpret_cast<void**>(&pinned_sums_), sizeof(cuda::LossSums)));
      MIRRORLAB_CUDA_CHECK(cudaEventCreateWithFlags(&sums_ready_, cudaEventDisableTiming));
      MIRRORLAB_CUDA_CHECK(cudaEventCreate(&anchor_));
      sums_ = arena.allocate(sizeof(cuda::LossSums), "loss sums");
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
      cuda::scale_matrix(c, m, n, ldc, beta, stream_);
      return;
    }
    // cuBLAS is column-major. A row-major matrix with row stride ld is the column-major
    // transpose with leading dimension ld, so row-major C = op(A) op(B) is column-major
    // C^T = op(B)^T op(A)^T: swap the operands and m with n; the transpose flags stay.
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    MIRRORLAB_CUBLAS_CHECK(
        cublasSgemm(blas_, op_b, op_a, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
  }

  void column_sums(const float* dy, int rows, int cols, float* db) override {
    if (cols <= 0) return;
    use_device();
    if (rows <= 0) {
      cuda::fill(db, static_cast<std::size_t>(cols), 0.0f, stream_);
      return;
    }
    ensure_ones(rows);
    // dy, row-major [rows, cols], is column-major [cols, rows] with leading dimension cols:
    // db = that matrix times a vector of ones (cuBLAS's reduction, deterministic).
    const float one = 1.0f, zero = 0.0f;
    MIRRORLAB_CUBLAS_CHECK(cublasSgemv(blas_, CUBLAS_OP_N, cols, rows, &one, dy, cols,
                                       ones_.as<float>(), 1, &zero, db, 1));
  }

  // --- layer kernels ---------------------------------------------------------------------------
  void broadcast_rows(const float* bias, int rows, int cols, float* out) override {
    use_device();
    cuda::broadcast_rows(bias, rows, cols, out, stream_);
  }
  void im2col_3x3(const float* x, int batch, int h, int w, int c, float* cols) override {
    use_device();
    cuda::im2col_3x3(x, batch, h, w, c, cols, stream_);
  }
  void col2im_3x3(const float* dcols, int batch, int h, int w, int c, float* dx) override {
    use_device();
    cuda::col2im_3x3(dcols, batch, h, w, c, dx, stream_);
  }
  void relu_forward(const float* x, std::size_t n, float* y) override {
    use_device();
    cuda::relu_forward(x, n, y, stream_);
  }
  void relu_backward(const float* x, const float* dy, std::size_t n, float* dx) override {
    use_device();
    cuda::relu_backward(x, dy, n, dx, stream_);
  }
  void max_pool_2x2_forward(const float* x, int batch, int h, int w, int c, float* y,
                            float* which) override {
    use_device();
    cuda::max_pool_2x2_forward(x, batch, h, w, c, y, which, stream_);
  }
  void max_pool_2x2_backward(const float* dy, const float* which, int batch, int h, int w, int c,
                             float* dx) override {
    use_device();
    cuda::max_pool_2x2_backward(dy, which, batch, h, w, c, dx, stream_);
  }

  // --- loss --------------------------------------------------------------------------------------
  void softmax_cross_entropy(const float* logits, const std::uint8_t* labels, int batch,
                             int classes, float grad_scale, float* grad,
                             LossStats* stats) override {
    use_device();
    wait_loss_stats();  // the pinned slot holds one call's sums: finish the previous one first
    grow(loss_rows_, *arena_,
         sizeof(cuda::LossRow) * static_cast<std::size_t>(batch > 0 ? batch : 1), "loss rows");
    cuda::softmax_cross_entropy(logits, labels, batch, classes, grad_scale, grad,
                                loss_rows_.as<cuda::LossRow>(), sums_.as<cuda::LossSums>(),
                                stream_);
    // Pinned destination: a truly asynchronous copy, so the host goes on enqueueing.
    MIRRORLAB_CUDA_CHECK(cudaMemcpyAsync(pinned_sums_, sums_.data(), sizeof(cuda::LossSums),
                                         cudaMemcpyDeviceToHost, stream_));
    MIRRORLAB_CUDA_CHECK(cudaEventRecord(sums_ready_, stream_));
    pending_stats_ = stats;
    pending_count_ = batch;
  }

  void wait_loss_stats() override {
    if (pending_stats_ == nullptr) return;
    LossStats* out = pending_stats_;
    pending_stats_ = nullptr;
    use_device();
    MIRRORLAB_CUDA_CHECK(cudaEventSynchronize(sums_ready_));
    out->loss_sum = pinned_sums_->loss_sum;
    out->correct = pinned_sums_->correct;
    out->correct_top5 = pinned_sums_->correct_top5;
    out->count = pending_count_;
  }

  // --- optimizers --------------------------------------------------------------------------------
  void sgd_update(float* params, const float* grads, float* velocity, std::size_t n, float lr,
                  float momentum) override {
    use_device();
    cuda::sgd_update(params, grads, velocity, n, lr, momentum, stream_);
  }
  void adam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                   const AdamStep& step) override {
    use_device();
    cuda::adam_update(params, grads, m, v, n, step, stream_);
  }
  void nadam_update(float* params, const float* grads, float* m, float* v, std::size_t n,
                    const NadamStep& step) override {
    use_device();
    cuda::nadam_update(params, grads, m, v, n, step, stream_);
  }

  // --- memory ------------------------------------------------------------------------------------
  void copy(float* dst, const float* src, std::size_t n) override {
    if (n == 0) return;
    use_device();
    MIRRORLAB_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  }
  void fill(float* dst, std::size_t n, float value) override {
    use_device();
    cuda::fill(dst, n, value, stream_);
  }
  std::size_t first_nonfinite(const float* x, std::size_t n) override {
    if (n == 0) return 0;
    use_device();
    grow(nonfinite_slot_, *arena_, sizeof(unsigned long long), "finiteness check");
    return cuda::first_nonfinite(x, n, nonfinite_slot_.as<unsigned long long>(), stream_);
  }
  // From pageable host memory (every caller's std::vector) cudaMemcpyAsync returns once the
  // bytes are staged, so the caller may reuse its buffer at once and the host does not wait for
  // the GPU. (From pinned memory it would return before reading: not used that way.)
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override {
    if (bytes == 0) return;
    use_device();
    MIRRORLAB_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
  }
  // The one call that may come from another replica's thread: the step recorder reads every
  // replica's gradients from the thread that ends an all-reduce step, while the others are
  // parked. So it leaves that thread's current GPU as it found it (on physical GPUs it differs).
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    int previous = ordinal_;
    MIRRORLAB_CUDA_CHECK(cudaGetDevice(&previous));
    use_device();
    cudaError_t status = cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_);
    if (status == cudaSuccess) status = cudaStreamSynchronize(stream_);
    if (previous != ordinal_) (void)cudaSetDevice(previous);
    MIRRORLAB_CUDA_CHECK(status);
  }
  void synchronize() override {
    use_device();
    MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    wait_loss_stats();
  }

  // --- timing ------------------------------------------------------------------------------------
  // The anchor ties the stream's clock to the host's: recorded on an idle stream and waited for,
  // its host time is known to within the wait's latency (microseconds). Every mark of the step is
  // then anchor's host time + cudaEventElapsedTime(anchor, mark), read after the step.
  void begin_marks() override {
    use_device();
    MIRRORLAB_CUDA_CHECK(cudaEventRecord(anchor_, stream_));
    MIRRORLAB_CUDA_CHECK(cudaEventSynchronize(anchor_));
    anchor_host_ = vgpu::Clock::now();
    anchored_ = true;
    next_mark_ = 0;
  }
  TimeMark mark() override {
    if (!anchored_) begin_marks();
    use_device();
    if (next_mark_ == marks_.size()) {
      // Events are made once and reused every step (made lazily: a step has a dozen marks).
      cudaEvent_t event = nullptr;
      MIRRORLAB_CUDA_CHECK(cudaEventCreate(&event));
      marks_.push_back(event);
    }
    MIRRORLAB_CUDA_CHECK(cudaEventRecord(marks_[next_mark_], stream_));
    return TimeMark{vgpu::Clock::now(), static_cast<int>(next_mark_++)};
  }
  vgpu::TimePoint time_of(const TimeMark& mark) override {
    if (mark.event < 0 || static_cast<std::size_t>(mark.event) >= next_mark_) return mark.host;
    use_device();
    float ms = 0;
    MIRRORLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, anchor_, marks_[mark.event]));
    return anchor_host_ + std::chrono::duration_cast<vgpu::Clock::duration>(
                              std::chrono::duration<double, std::milli>(ms));
  }
  bool marks_deferred() const override { return true; }

 private:
  void use_device() { MIRRORLAB_CUDA_CHECK(cudaSetDevice(ordinal_)); }

  void ensure_ones(int rows) {
    if (ones_count_ >= rows) return;
    ones_count_ = 0;  // until the ones are there: a grow that throws leaves no block behind
    grow(ones_, *arena_, sizeof(float) * static_cast<std::size_t>(rows), "column-sum ones");
    cuda::fill(ones_.as<float>(), static_cast<std::size_t>(rows), 1.0f, stream_);
    ones_count_ = rows;
  }

  // Frees what the constructor made, in any state; errors are ignored (nothing to do about them
  // in a destructor, and a failed constructor reports its own).
  void release() noexcept {
    (void)cudaSetDevice(ordinal_);
    (void)cudaStreamSynchronize(stream_);  // nothing may still write into pinned_sums_
    for (cudaEvent_t e : marks_) (void)cudaEventDestroy(e);
    marks_.clear();
    if (anchor_ != nullptr) (void)cudaEventDestroy(anchor_);
    if (sums_ready_ != nullptr) (void)cudaEventDestroy(sums_ready_);
    if (pinned_sums_ != nullptr) (void)cudaFreeHost(pinned_sums_);
    if (blas_ != nullptr) (void)cublasDestroy(blas_);
    anchor_ = sums_ready_ = nullptr;
    pinned_sums_ = nullptr;
    blas_ = nullptr;
  }

  int ordinal_;
  cudaStream_t stream_;
  vgpu::MemoryArena* arena_;
  cublasHandle_t blas_ = nullptr;
  vgpu::Allocation ones_;
  vgpu::Allocation nonfinite_slot_;  // first_nonfinite's answer on the GPU
  int ones_count_ = 0;
  vgpu::Allocation loss_rows_, sums_;
  cuda::LossSums* pinned_sums_ = nullptr;
  cudaEvent_t sums_ready_ = nullptr;
  LossStats* pending_stats_ = nullptr;
  int pending_count_ = 0;
  cudaEvent_t anchor_ = nullptr;
  vgpu::TimePoint anchor_host_{};
  bool anchored_ = false;
  std::vector<cudaEvent_t> marks_;
  std::size_t next_mark_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// 3. Factory
// ---------------------------------------------------------------------------------------------
std::unique_ptr<Ops> make_cuda_ops(int cuda_ordinal, void* cuda_stream, vgpu::MemoryArena& arena) {
  if (cuda_ordinal < 0) {
    throw std::invalid_argument("make_cuda_ops: a CUDA device needs a GPU ordinal >= 0");
  }
  return std::make_unique<CudaOps>(cuda_ordinal, static_cast<cudaStream_t>(cuda_stream), arena);
}

}  // namespace mirrorlab::core
