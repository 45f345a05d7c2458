#include "core/strategy/step_kernels.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/nn/kernel_elements_train.h"
#include "core/nn/loss.h"
#include "core/nn/ops.h"
#include "core/nn/tensor.h"
#include "core/nn/training_flops.h"

namespace mirrorlab::core {

namespace {

constexpr double kFloat = sizeof(float);

// Kernels that record what they were asked to do and compute nothing, over host memory (so the
// model can be built and bound as on any device).
class RecordingOps final : public Ops {
 public:
  std::vector<timing::KernelWork> kernels;
  std::string part = "forward";

  const char* name() const override { return "recording"; }
  bool host_accessible() const override { return true; }

  void gemm(bool, bool, int m, int n, int k, float, const float*, int, const float*, int,
            float beta, float*, int) override {
    if (m <= 0 || n <= 0) return;
    const double mn = static_cast<double>(m) * n;
    add("gemm", timing::LaunchKind::kLibrary, 2.0 * mn * k,
        kFloat *
            (static_cast<double>(m) * k + static_cast<double>(k) * n + mn * (beta != 0 ? 2 : 1)));
  }
  void broadcast_rows(const float*, int rows, int cols, float*) override {
    add("broadcast_rows", timing::LaunchKind::kKernel, 0,
        kFloat * (cols + static_cast<double>(rows) * cols));
  }
  // cuBLAS's matrix-vector product with a vector of ones: a multiply-add an element.
  void column_sums(const float*, int rows, int cols, float*) override {
    if (cols <= 0) return;
    const double n = static_cast<double>(rows) * cols;
    add("column_sums", timing::LaunchKind::kLibrary, 2 * n, kFloat * (n + rows + cols));
  }
  void im2col_3x3(const float*, int batch, int h, int w, int c, float*) override {
    const double in = static_cast<double>(batch) * h * w * c;
    add("im2col_3x3", timing::LaunchKind::kKernel, 0,
        kFloat * (in + 9.0 * batch * (h - 2) * (w - 2) * c));
  }
  void col2im_3x3(const float*, int batch, int h, int w, int c, float*) override {
    const double in = static_cast<double>(batch) * h * w * c;
    const double cols = 9.0 * batch * (h - 2) * (w - 2) * c;
    add("col2im_3x3", timing::LaunchKind::kKernel, cols, kFloat * (in + cols));
  }
  void relu_forward(const float*, std::size_t n, float*) override {
    add("relu_forward", timing::LaunchKind::kKernel, static_cast<double>(n),
        2 * kFloat * static_cast<double>(n));
  }
  void relu_backward(const float*, const float*, std::size_t n, float*) override {
    add("relu_backward", timing::LaunchKind::kKernel, static_cast<double>(n),
        3 * kFloat * static_cast<double>(n));
  }
  void max_pool_2x2_forward(const float*, int batch, int h, int w, int c, float*, float*) override {
    const double in = static_cast<double>(batch) * h * w * c;
    add("max_pool_forward", timing::LaunchKind::kKernel, 0.75 * in, kFloat * 1.5 * in);
  }
  void max_pool_2x2_backward(const float*, const float*, int batch, int h, int w, int c,
                             float*) override {
    const double in = static_cast<double>(batch) * h * w * c;
    add("max_pool_backward", timing::LaunchKind::kKernel, 0, kFloat * 1.5 * in);
  }
  void softmax_cross_entropy(const float*, const std::uint8_t*, int batch, int classes, float,
                             float*, LossStats*) override {
    // Two kernels: each row's loss and gradient, then the rows' sums.
    const double n = static_cast<double>(batch) * classes;
    const double row = sizeof(elements::LossRow);  // each row's loss and counts
    add("softmax_cross_entropy_rows", timing::LaunchKind::kKernel, 5 * n,
        kFloat * 2 * n + batch + row * batch);
    add("sum_loss_rows", timing::LaunchKind::kKernel, 3.0 * batch, row * batch);
  }
  void wait_loss_stats() override {}
  void sgd_update(float*, const float*, float* velocity, std::size_t n, float, float) override {
    const double e = static_cast<double>(n);
    add("sgd_update", timing::LaunchKind::kKernel, (velocity != nullptr ? 4 : 2) * e,
        kFloat * (velocity != nullptr ? 5 : 3) * e);
  }
  void adam_update(float*, const float*, float*, float*, std::size_t n, const AdamStep&) override {
    add("adam_update", timing::LaunchKind::kKernel, 12.0 * static_cast<double>(n),
        kFloat * 7 * static_cast<double>(n));
  }
  void nadam_update(float*, const float*, float*, float*, std::size_t n,
                    const NadamStep&) override {
    add("nadam_update", timing::LaunchKind::kKernel, 18.0 * static_cast<double>(n),
        kFloat * 7 * static_cast<double>(n));
  }
  void copy(float*, const float*, std::size_t n) override {
    if (n > 0) add("copy", timing::LaunchKind::kCopy, 0, 2 * kFloat * static_cast<double>(n));
  }
  void fill(float*, std::size_t n, float) override {
    add("fill", timing::LaunchKind::kKernel, 0, kFloat * static_cast<double>(n));
  }
  void copy_to_device(void*, const void*, std::size_t) override {}
  void copy_to_host(void*, const void*, std::size_t) override {}
  void synchronize() override {}
  std::size_t first_nonfinite(const float*, std::size_t n) override {
    find_nonfinite(nullptr, n, nullptr);
    return n;
  }
  void find_nonfinite(const float*, std::size_t n, std::size_t* at) override {
    if (at != nullptr) *at = n;
    if (n == 0) return;
    // Two kernels: the answer's slot set to "none", then the search.
    add("set_slot", timing::LaunchKind::kKernel, 0, 8);
    add("first_nonfinite", timing::LaunchKind::kKernel, static_cast<double>(n),
        kFloat * static_cast<double>(n));
  }

 private:
  void add(const char* kernel, timing::LaunchKind kind, double flops, double bytes) {
    kernels.push_back({kernel, part, kind, flops, bytes});
  }
};

// One replica's step recorded at `batch` examples, as ReplicaContext runs it on a GPU: forward;
// the loss and backward; the search for a NaN gradient; the optimizer's update.
std::vector<timing::KernelWork> record_step(ModelKind kind, const OptimizerConfig& config,
                                            int batch) {
  vgpu::MemoryArena arena("step kernels", std::size_t{1} << 32);
  RecordingOps ops;
  const std::unique_ptr<Model> model = Model::create(kind, arena, ops);
  const std::unique_ptr<Optimizer> optimizer =
      make_optimizer(config, model->num_params(), arena, ops);
  Shape shape = model->input_shape();
  shape.insert(shape.begin(), batch);
  const Tensor x(arena, shape, "step kernels' input");
  const std::vector<std::uint8_t> labels(static_cast<std::size_t>(batch), 0);
  ops.kernels.clear();  // what building the model queued (initial values) is not the step's
  const Tensor& logits = model->forward(x);
  ops.part = "backward";
  Tensor grad_logits(arena, logits.shape(), "step kernels' logits gradient");
  LossStats stats;
  enqueue_softmax_cross_entropy(ops, logits, labels, labels.data(), 1.0f / batch, &grad_logits,
                                &arena, &stats);
  model->backward(grad_logits);
  std::size_t at = 0;
  model->queue_gradient_check(&at);
  ops.part = "update";
  optimizer->apply(model->params(), model->grads());
  return ops.kernels;
}

}  // namespace

std::vector<timing::KernelWork> step_kernels(ModelKind model, const OptimizerConfig& optimizer,
                                             std::size_t batch) {
  if (batch == 0) throw std::invalid_argument("a step's kernels need a batch of 1 or more");
  // Recorded once per model and kind of update (the work does not depend on the rates): the GUI
  // asks every frame.
  using Key = std::tuple<ModelKind, OptimizerKind, bool>;
  static std::mutex mutex;
  static std::map<Key, std::pair<std::vector<timing::KernelWork>, std::vector<timing::KernelWork>>>
      recorded;
  const Key key{model, optimizer.kind, optimizer.momentum != 0.0f};
  std::vector<timing::KernelWork> one, two;
  {
    const std::lock_guard lock(mutex);
    auto at = recorded.find(key);
    if (at == recorded.end()) {
      at = recorded
               .emplace(key, std::pair{record_step(model, optimizer, 1),
                                       record_step(model, optimizer, 2)})
               .first;
    }
    one = at->second.first;
    two = at->second.second;
  }
  if (batch == 1) return one;
  if (two.size() != one.size()) {
    throw std::logic_error("a step's kernels differ in number between batches of 1 and 2");
  }
  const double more = static_cast<double>(batch) - 1;
  for (std::size_t i = 0; i < one.size(); ++i) {
    one[i].flops += (two[i].flops - one[i].flops) * more;
    one[i].bytes += (two[i].bytes - one[i].bytes) * more;
  }
  return one;
}

ModelledCompute modelled_compute(ModelKind model, const OptimizerConfig& optimizer,
                                 std::size_t batch, const timing::Topology& machine,
                                 timing::SecondsText seconds_text) {
  ModelledCompute out;
  if (machine.compute.given()) {
    out.from_kernels = true;
    out.parts = timing::compute_time(step_kernels(model, optimizer, batch), machine.compute);
    out.seconds = out.parts.seconds;
    out.overlapped = out.parts.launches + out.parts.host;
    out.source = timing::kernels_compute_sentence(machine, out.parts, seconds_text);
    return out;
  }
  if (batch == 0) throw std::invalid_argument("a step's compute needs a batch of 1 or more");
  const TrainingFlops f = training_flops(model, optimizer);
  out.seconds = timing::compute_seconds(f.per_step(batch), machine);
  out.source =
      timing::flops_compute_sentence(machine, f.forward, f.backward, f.update, batch, seconds_text);
  return out;
}

}  // namespace mirrorlab::core
