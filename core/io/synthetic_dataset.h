// Small synthetic Fashion-MNIST-shaped data: fast, exact tests and benchmarks of training.
#pragma once

#include <cstdint>
#include <random>

#include "core/io/dataset.h"

namespace mirrorlab::core {

// `n` 28x28 images whose label is learnable (brightness of a band depends on the label).
inline Dataset synthetic_dataset(std::size_t n, std::uint64_t seed = 7) {
  Dataset d;
  d.rows = 28;
  d.cols = 28;
  d.images.resize(n * 28 * 28);
  d.labels.resize(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const int label = static_cast<int>(rng() % 10);
    d.labels[i] = static_cast<std::uint8_t>(label);
    for (int p = 0; p < 28 * 28; ++p) {
      const int row = p / 28;
      const bool band = row / 3 == label;
      d.images[i * 784 + p] = static_cast<std::uint8_t>((band ? 160 : 0) + rng() % 64);
    }
  }
  return d;
}

}  // namespace mirrorlab::core
