// Optimizers, with Keras 3's formulas (checked against Keras 3.15 by scripts/check-tensorflow).
// Each replica has its own optimizer (its slots in its device's arena) and applies the same
// update to its own copy of the weights.
//
//   SGD:   v = momentum*v - lr*g;  w += v   (momentum 0 by default, as Keras': w -= lr*g)
//   Adam:  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;
//          lr_t = lr*sqrt(1-b2^t)/(1-b1^t);  w -= lr_t*m/(sqrt(v)+eps)
//   Nadam: Keras 3's schedule u_t = b1*(1 - 0.5*0.96^t), m_hat uses u_{t+1}
//   b1 = 0.9, b2 = 0.999, eps = 1e-7.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/io/choice_names.h"
#include "core/nn/ops.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::core {

enum class OptimizerKind { kSgd, kAdam, kNadam };
std::span<const ChoiceName<OptimizerKind>> choice_names(OptimizerKind);  // core/io/choice_names.h
OptimizerKind parse_optimizer_kind(std::string_view name);               // "sgd"|"adam"|"nadam"
const char* to_string(OptimizerKind kind);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  float learning_rate = 1e-3f;
  float momentum = 0.0f;  // SGD only; 0 as Keras' SGD (none)
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f;
  bool operator==(const OptimizerConfig&) const = default;
};

// The most updates an optimizer may have applied (restore() refuses more): 2^50, far beyond any
// run, and far from overflowing the count as it goes on.
constexpr std::int64_t kMaxOptimizerIterations = std::int64_t{1} << 50;

// Throws std::invalid_argument for a learning rate that is not a finite number above 0.
void check_learning_rate(float learning_rate);

// What an optimizer carries from one update to the next besides its slots: all a checkpoint
// needs to go on bit for bit.
struct OptimizerProgress {
  std::int64_t iterations = 0;     // updates applied so far (Keras' optimizer.iterations)
  double momentum_schedule = 1.0;  // Nadam: the product of every u_t so far; 1 for the others
};

// One slot of the optimizer's state: `size` floats in its device's memory, one per parameter.
struct OptimizerSlot {
  std::string name;  // "momentum" (SGD), "m" and "v" (Adam, Nadam)
  float* values = nullptr;
  std::size_t size = 0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  // One update of params from grads (same length as the optimizer was made for), both in the
  // memory of the device whose Ops the optimizer was made with.
  virtual void apply(std::span<float> params, std::span<const float> grads) = 0;
  std::int64_t iterations() const { return iterations_; }

  // Its state, for checkpoints: the slots (none for SGD without momentum), read and written with
  // the device's Ops, and the progress, set back with restore().
  virtual std::vector<OptimizerSlot> slots() = 0;
  virtual OptimizerProgress progress() const { return {iterations_, 1.0}; }
  // Throws std::invalid_argument, changing nothing, for a count below 0 or above
  // kMaxOptimizerIterations, or a schedule that is not a finite number in (0, 1] (Nadam's
  // product of factors below 1).
  virtual void restore(const OptimizerProgress& progress);
  // The learning rate of the updates from now on (Keras' optimizer variable, which a weights
  // file sets). Throws std::invalid_argument, changing nothing, for one that is not a finite
  // number above 0.
  void set_learning_rate(float learning_rate);

 protected:
  virtual void take_learning_rate(float learning_rate) = 0;  // checked by set_learning_rate
  std::int64_t iterations_ = 0;
};

// Slots (momentum, m, v) are taken from `arena` for `num_params` values, zero-initialised; the
// updates run on `ops`, the kernels of the arena's device.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, std::size_t num_params,
                                          vgpu::MemoryArena& arena, Ops& ops = cpu_ops());

}  // namespace mirrorlab::core
