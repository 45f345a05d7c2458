// SGD (with momentum), Adam and Nadam with Keras' update formulas. Per-step scalars (bias
// corrections, Nadam's momentum schedule) are computed in double so that they do not drift over
// long runs; the per-element loop stays in float like the weights themselves.
#include "core/nn/optimizer.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace mirrorlab::core {

std::span<const ChoiceName<OptimizerKind>> choice_names(OptimizerKind) {
  static constexpr ChoiceName<OptimizerKind> kNames[] = {
      {OptimizerKind::kSgd, "sgd", "Keras' SGD: no momentum unless one is given"},
      {OptimizerKind::kAdam, "adam", "Keras 3's Adam"},
      {OptimizerKind::kNadam, "nadam", "Keras 3's Nadam"},
  };
  return kNames;
}

OptimizerKind parse_optimizer_kind(std::string_view name) {
  return parse_choice<OptimizerKind>(name, "optimizer");
}

const char* to_string(OptimizerKind kind) { return choice_name(kind); }

void check_learning_rate(float learning_rate) {
  if (!(std::isfinite(learning_rate) && learning_rate > 0.0f)) {
    throw std::invalid_argument("a learning rate must be a finite number above 0, not " +
                                std::to_string(learning_rate));
  }
}

void Optimizer::set_learning_rate(float learning_rate) {
  check_learning_rate(learning_rate);
  take_learning_rate(learning_rate);
}

void Optimizer::restore(const OptimizerProgress& progress) {
  if (progress.iterations < 0 || progress.iterations > kMaxOptimizerIterations) {
    throw std::invalid_argument("an optimizer cannot have applied " +
                                std::to_string(progress.iterations) + " updates");
  }
  if (!(progress.momentum_schedule > 0.0 && progress.momentum_schedule <= 1.0)) {
    throw std::invalid_argument("a momentum schedule must be a number in (0, 1], not " +
                                std::to_string(progress.momentum_schedule));
  }
  iterations_ = progress.iterations;
}

namespace {

// Takes one zero-initialised float slot of `n` values from the arena; an OutOfMemoryError from
// the arena propagates to the caller of make_optimizer.
vgpu::Allocation allocate_slot(vgpu::MemoryArena& arena, std::size_t n, const char* what) {
  return arena.allocate(n * sizeof(float), what);
}

// Common base: remembers the parameter count and checks every apply() against it, so a model
// and its optimizer that disagree fail loudly instead of writing past a slot.
class OptimizerBase : public Optimizer {
 public:
  OptimizerBase(std::size_t num_params, Ops& ops) : num_params_(num_params), ops_(&ops) {}

 protected:
  void check_sizes(std::span<float> params, std::span<const float> grads) const {
    if (params.size() != num_params_ || grads.size() != num_params_) {
      throw std::invalid_argument(
          name() + " optimizer: apply() got " + std::to_string(params.size()) + " parameters and " +
          std::to_string(grads.size()) + " gradients, but it was made for " +
          std::to_string(num_params_) + " parameters");
    }
  }

  std::size_t num_params_;
  Ops* ops_;
};

class Sgd final : public OptimizerBase {
 public:
  Sgd(const OptimizerConfig& config, std::size_t num_params, vgpu::MemoryArena& arena, Ops& ops)
      : OptimizerBase(num_params, ops), lr_(config.learning_rate), momentum_(config.momentum) {
    // Plain SGD needs no state: no slot, so its memory bar shows nothing for the optimizer.
    if (momentum_ != 0.0f) velocity_ = allocate_slot(arena, num_params, "sgd slot");
  }

  std::string name() const override { return "sgd"; }
  std::vector<OptimizerSlot> slots() override {
    if (momentum_ == 0.0f) return {};
    return {{"momentum", velocity_.as<float>(), num_params_}};
  }

  void apply(std::span<float> params, std::span<const float> grads) override {
    check_sizes(params, grads);
    ops_->sgd_update(params.data(), grads.data(),
                     momentum_ == 0.0f ? nullptr : velocity_.as<float>(), params.size(), lr_,
                     momentum_);
    ++iterations_;
  }

 private:
  void take_learning_rate(float learning_rate) override { lr_ = learning_rate; }
  float lr_, momentum_;
  vgpu::Allocation velocity_;
};

// Adam and Nadam keep the same two slots: m (first moment) and v (second moment).
class MomentOptimizer : public OptimizerBase {
 public:
  std::vector<OptimizerSlot> slots() override {
    return {{"m", m_.as<float>(), num_params_}, {"v", v_.as<float>(), num_params_}};
  }

 protected:
  void take_learning_rate(float learning_rate) override { config_.learning_rate = learning_rate; }
  MomentOptimizer(const OptimizerConfig& config, std::size_t num_params, vgpu::MemoryArena& arena,
                  Ops& ops, const char* slot_name)
      : OptimizerBase(num_params, ops),
        config_(config),
        m_(allocate_slot(arena, num_params, slot_name)),
        v_(allocate_slot(arena, num_params, slot_name)) {}

  OptimizerConfig config_;
  vgpu::Allocation m_, v_;
};

class Adam final : public MomentOptimizer {
 public:
  Adam(const OptimizerConfig& config, std::size_t num_params, vgpu::MemoryArena& arena, Ops& ops)
      : MomentOptimizer(config, num_params, arena, ops, "adam slot") {}

  std::string name() const override { return "adam"; }

  void apply(std::span<float> params, std::span<const float> grads) override {
    check_sizes(params, grads);
    const double t = static_cast<double>(iterations_ + 1);
    const double b1 = config_.beta1, b2 = config_.beta2;
    // Keras folds both bias corrections into the step size (epsilon is not corrected).
    const float lr_t = static_cast<float>(config_.learning_rate * std::sqrt(1.0 - std::pow(b2, t)) /
                                          (1.0 - std::pow(b1, t)));
    ops_->adam_update(params.data(), grads.data(), m_.as<float>(), v_.as<float>(), params.size(),
                      AdamStep{lr_t, config_.beta1, config_.beta2, config_.epsilon});
    ++iterations_;
  }
};

class Nadam final : public MomentOptimizer {
 public:
  Nadam(const OptimizerConfig& config, std::size_t num_params, vgpu::MemoryArena& arena, Ops& ops)
      : MomentOptimizer(config, num_params, arena, ops, "nadam slot") {}

  std::string name() const override { return "nadam"; }
  OptimizerProgress progress() const override { return {iterations_, m_schedule_}; }
  void restore(const OptimizerProgress& progress) override {
    Optimizer::restore(progress);  // checks both
    m_schedule_ = progress.momentum_schedule;
  }

  void apply(std::span<float> params, std::span<const float> grads) override {
    check_sizes(params, grads);
    const double t = static_cast<double>(iterations_ + 1);
    const double b1 = config_.beta1, b2 = config_.beta2;
    // Keras 3's momentum schedule (Dozat's "warming" of beta1): u_t and u_{t+1}, with 0.96^t
    // (Keras 2 had 0.96^(0.004 t); scripts/check-tensorflow ran Keras 3.15 to tell).
    const double u_t = b1 * (1.0 - 0.5 * std::pow(0.96, t));
    const double u_next = b1 * (1.0 - 0.5 * std::pow(0.96, t + 1.0));
    // The product of all u's so far is state (it cannot be recomputed cheaply from t alone);
    // it is committed only after the checks above, so a failed apply leaves it untouched.
    const double m_schedule_t = m_schedule_ * u_t;
    const double m_schedule_next = m_schedule_t * u_next;
    m_schedule_ = m_schedule_t;

    const float g_scale = static_cast<float>(1.0 / (1.0 - m_schedule_t));
    const float m_scale = static_cast<float>(1.0 / (1.0 - m_schedule_next));
    const float v_scale = static_cast<float>(1.0 / (1.0 - std::pow(b2, t)));
    const float c_g = static_cast<float>(1.0 - u_t);
    const float c_m = static_cast<float>(u_next);
    ops_->nadam_update(params.data(), grads.data(), m_.as<float>(), v_.as<float>(), params.size(),
                       NadamStep{config_.learning_rate, config_.beta1, config_.beta2,
                                 config_.epsilon, g_scale, m_scale, v_scale, c_g, c_m});
    ++iterations_;
  }

 private:
  double m_schedule_ = 1.0;  // the product of every u so far
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::size_t num_params,
                                          vgpu::MemoryArena& arena, Ops& ops) {
  switch (config.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<Sgd>(config, num_params, arena, ops);
    case OptimizerKind::kAdam:
      return std::make_unique<Adam>(config, num_params, arena, ops);
    case OptimizerKind::kNadam:
      return std::make_unique<Nadam>(config, num_params, arena, ops);
  }
  throw std::invalid_argument("make_optimizer: unknown optimizer kind");
}

}  // namespace mirrorlab::core
