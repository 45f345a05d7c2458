// A Sequential model as the list of its layers, what Keras' Sequential holds: the models a user
// writes (the Python module's keras.Sequential), beside the two that ModelKind names. Only the
// layers the core computes: Conv2D (3x3, stride 1, valid), MaxPooling2D (2x2), Flatten, Dense,
// and ReLU (a layer of its own, or a Conv2D's or Dense's activation).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/nn/layers.h"

namespace mirrorlab::core {

struct LayerSpec {
  enum class Kind { kConv2D, kMaxPooling2D, kFlatten, kDense, kReLU };
  Kind kind = Kind::kDense;
  int size = 0;      // Dense: units; Conv2D: filters; else 0
  std::string name;  // Keras' name: "conv2d", "dense_1"
  bool operator==(const LayerSpec&) const = default;
};

// "Conv2D", "MaxPooling2D", "Flatten", "Dense", "ReLU": Keras' class names.
const char* to_string(LayerSpec::Kind kind);
// The layers of `spec`, unbound. Throws std::invalid_argument naming the layer (by its place and
// name) for an empty list, a size out of [1, 65536] for Dense and Conv2D, a size given to a layer
// that takes none, or an empty or repeated name.
std::vector<std::unique_ptr<Layer>> make_layers(std::span<const LayerSpec> spec);
// One line: "Conv2D(32) ReLU MaxPooling2D Flatten Dense(128) ReLU Dense(10)".
std::string describe(std::span<const LayerSpec> spec);

}  // namespace mirrorlab::core
