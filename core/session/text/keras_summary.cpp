#include "core/session/text/keras_summary.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/session/text/console_text.h"

namespace mirrorlab::core {
namespace {

// Keras 3 sizes a Sequential model's columns at 45%, 80% and 100% of 76 characters (88 less the
// room it keeps on an 80-column terminal): 31, 22 and 13 characters between the borders' spaces.
constexpr int kName = 31, kShape = 22, kParams = 13;

// A border line: left corner, the three columns' widths (plus their padding) of `fill`, joints.
std::string rule(const char* left, const char* fill, const char* joint, const char* right) {
  return std::string(left) + repeat(fill, kName + 2) + joint + repeat(fill, kShape + 2) + joint +
         repeat(fill, kParams + 2) + right + "\n";
}

std::string row(const char* bar, const std::string& name, const std::string& shape,
                const std::string& params) {
  char text[256];
  std::snprintf(text, sizeof text, "%s %-*s %s %-*s %s %*s %s\n", bar, kName, name.c_str(), bar,
                kShape, shape.c_str(), bar, kParams, params.c_str(), bar);
  return text;
}

}  // namespace

std::string with_commas(std::size_t n) { return grouped_digits(std::to_string(n)); }

std::string readable_memory_size(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int unit = 0;
  while (unit < 5 && bytes / 1024 >= 1) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.2f %s", bytes, units[unit]);
  return text;
}

std::string model_summary(const Model& model, const std::string& name) {
  return model_summary(model, name, {});
}

std::string model_summary(const Model& model, const std::string& name, const KerasRows& rows) {
  std::vector<LayerSummary> layers;
  for (LayerSummary layer : model.summary()) {
    if (std::find(rows.folded.begin(), rows.folded.end(), layer.name) != rows.folded.end()) {
      continue;
    }
    if (auto type = rows.types.find(layer.name); type != rows.types.end()) {
      layer.type = type->second;
    }
    layers.push_back(std::move(layer));
  }
  std::string out = "Model: \"" + name + "\"\n";
  out += rule("\u250f", "\u2501", "\u2533", "\u2513");              // ┏━┳━┓
  out += row("\u2503", "Layer (type)", "Output Shape", "Param #");  // ┃
  out += rule("\u2521", "\u2501", "\u2547", "\u2529");              // ┡━╇━┩
  for (std::size_t i = 0; i < layers.size(); ++i) {
    // Keras prints the batch dimension as None: (None, 26, 26, 32), (None, 784).
    std::string shape = "(None";
    for (std::int64_t d : layers[i].output_shape) shape += ", " + std::to_string(d);
    shape += ")";
    out += row("\u2502", layers[i].name + " (" + layers[i].type + ")", shape,  // │
               with_commas(layers[i].params));
    out += i + 1 < layers.size() ? rule("\u251c", "\u2500", "\u253c", "\u2524")   // ├─┼─┤
                                 : rule("\u2514", "\u2500", "\u2534", "\u2518");  // └─┴─┘
  }
  const std::string total = with_commas(model.num_params()) + " (" +
                            readable_memory_size(static_cast<double>(model.num_params()) * 4) + ")";
  out += " Total params: " + total + "\n Trainable params: " + total +
         "\n Non-trainable params: 0 (0.00 B)\n";
  return out;
}

}  // namespace mirrorlab::core
