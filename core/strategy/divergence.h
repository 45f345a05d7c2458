// Training that diverged: a loss or a gradient that is NaN or infinite. The strategy looks on
// every replica before the all-reduce, so the first one is named where it appears (step,
// replica, layer) and never reaches the weights: they stay those of the step before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace mirrorlab::core {

struct NonFiniteValue {
  std::int64_t step = 0;  // 1-based global training step in which it appeared
  int replica = 0;
  std::string device;  // "/gpu:1"
  std::string layer;   // the layer whose gradient holds it ("dense_1"); "" for the loss
  std::string tensor;  // and its tensor ("dense_1/kernel"), with the element's index in it
  std::size_t index = 0;
  double value = 0;  // NaN, +inf or -inf
  bool in_loss() const { return layer.empty(); }
};

// what(): "training diverged in step 37: a gradient of dense_1 on /gpu:1 (replica 1) is NaN
// (dense_1/kernel, element 7; found before the all-reduce: the weights are those after step
// 36)".
class DivergedError : public std::runtime_error {
 public:
  explicit DivergedError(NonFiniteValue where);
  const NonFiniteValue& where() const { return where_; }

 private:
  NonFiniteValue where_;
};

}  // namespace mirrorlab::core
