#include "core/nn/model_spec.h"

#include <set>
#include <stdexcept>

namespace mirrorlab::core {

const char* to_string(LayerSpec::Kind kind) {
  switch (kind) {
    case LayerSpec::Kind::kConv2D:
      return "Conv2D";
    case LayerSpec::Kind::kMaxPooling2D:
      return "MaxPooling2D";
    case LayerSpec::Kind::kFlatten:
      return "Flatten";
    case LayerSpec::Kind::kDense:
      return "Dense";
    case LayerSpec::Kind::kReLU:
      return "ReLU";
  }
  return "?";
}

namespace {

bool takes_size(LayerSpec::Kind kind) {
  return kind == LayerSpec::Kind::kConv2D || kind == LayerSpec::Kind::kDense;
}

constexpr int kMaxSize = 65536;

}  // namespace

std::vector<std::unique_ptr<Layer>> make_layers(std::span<const LayerSpec> spec) {
  if (spec.empty()) throw std::invalid_argument("a model needs at least one layer");
  std::set<std::string> names;
  std::vector<std::unique_ptr<Layer>> layers;
  for (std::size_t i = 0; i < spec.size(); ++i) {
    const LayerSpec& s = spec[i];
    const std::string where =
        "layer " + std::to_string(i) + " (" + to_string(s.kind) + " '" + s.name + "')";
    if (s.name.empty()) throw std::invalid_argument(where + " has no name: give it one");
    if (!names.insert(s.name).second) {
      throw std::invalid_argument(where + ": another layer has that name: names must differ");
    }
    if (takes_size(s.kind) && (s.size < 1 || s.size > kMaxSize)) {
      throw std::invalid_argument(where + ": " + std::to_string(s.size) + " " +
                                  (s.kind == LayerSpec::Kind::kDense ? "units" : "filters") +
                                  ": give a number from 1 to " + std::to_string(kMaxSize));
    }
    if (!takes_size(s.kind) && s.size != 0) {
      throw std::invalid_argument(where + " takes no size (given " + std::to_string(s.size) + ")");
    }
    switch (s.kind) {
      case LayerSpec::Kind::kConv2D:
        layers.push_back(make_conv2d_3x3(s.name, s.size));
        break;
      case LayerSpec::Kind::kMaxPooling2D:
        layers.push_back(make_max_pool_2x2(s.name));
        break;
      case LayerSpec::Kind::kFlatten:
        layers.push_back(make_flatten(s.name));
        break;
      case LayerSpec::Kind::kDense:
        layers.push_back(make_dense(s.name, s.size));
        break;
      case LayerSpec::Kind::kReLU:
        layers.push_back(make_relu(s.name));
        break;
    }
  }
  return layers;
}

std::string describe(std::span<const LayerSpec> spec) {
  std::string out;
  for (const LayerSpec& s : spec) {
    if (!out.empty()) out += ' ';
    out += to_string(s.kind);
    if (takes_size(s.kind)) out.append("(").append(std::to_string(s.size)).append(")");
  }
  return out;
}

}  // namespace mirrorlab::core
