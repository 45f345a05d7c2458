// Fashion-MNIST from Debian's dataset-fashion-mnist (gzipped IDX files), and seeded shuffling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace mirrorlab::core {

inline constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr int kFashionMnistSide = 28;  // images are 28x28: the models' input

// A damaged, missing or mismatched data file; what() names the file and the problem and says
// how to get good files (the Debian package). missing(): the file or folder is not there (or
// cannot be opened), else it is damaged; a front end adds how to point at other files.
class DataError : public std::runtime_error {
 public:
  DataError(const std::string& what, bool missing) : std::runtime_error(what), missing_(missing) {}
  bool missing() const { return missing_; }

 private:
  bool missing_;
};

// Images as bytes (0..255), row-major, one after another; labels 0..9.
struct Dataset {
  int rows = 0, cols = 0;
  std::vector<std::uint8_t> images;  // size() * rows * cols
  std::vector<std::uint8_t> labels;
  std::size_t size() const { return labels.size(); }
  std::size_t image_bytes() const { return static_cast<std::size_t>(rows) * cols; }
  const std::uint8_t* image(std::size_t i) const { return images.data() + i * image_bytes(); }
  // The first n examples (or all, if fewer), for short runs and tests.
  Dataset head(std::size_t n) const;
};

// Reads one gzipped (or plain) IDX file. Checks the magic number (0x00000803 images,
// 0x00000801 labels), the dimensions and that the file holds exactly what its header promises.
Dataset load_idx_images_and_labels(const std::filesystem::path& images,
                                   const std::filesystem::path& labels);

struct FashionMnist {
  Dataset train, test;
};
// Loads train-*-ubyte.gz and t10k-*-ubyte.gz from `dir`. Refuses images of any size but 28x28.
FashionMnist load_fashion_mnist(const std::filesystem::path& dir = kDefaultFashionMnistDir);

const char* fashion_mnist_class_name(int label);  // "T-shirt/top", ..., "Ankle boot"

// A permutation of 0..n-1 that depends only on (seed, epoch).
std::vector<std::uint32_t> shuffled_indices(std::size_t n, std::uint64_t seed, int epoch);

}  // namespace mirrorlab::core
