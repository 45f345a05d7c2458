// Fashion-MNIST IDX reading and seeded shuffling.
//
// The IDX files are read through zlib's gz* functions, which read gzipped and plain files alike,
// so a user who gunzipped the files by hand is served too. Every problem becomes a DataError that
// names the file, says exactly what is wrong with it and what to do about it: these messages are
// what a class sees when the package is missing or a download went wrong.
#include "core/io/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>

namespace mirrorlab::core {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
constexpr std::uint32_t kMaxSide = 100000;          // rows or columns; more is a damaged header
constexpr std::uint32_t kMaxCount = 100000000;      // examples in one file
constexpr std::uint64_t kMaxImageBytes = std::uint64_t{1} << 32;  // 4 GiB of pixels

constexpr const char* kMissingHint = "Install it with: sudo apt-get install dataset-fashion-mnist";
constexpr const char* kDamagedHint =
    "Reinstall the package with: sudo apt-get install --reinstall dataset-fashion-mnist";

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& problem,
                       const char* hint) {
  throw DataError(path.string() + ": " + problem + ". " + hint, hint == kMissingHint);
}

std::string hex32(std::uint32_t value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", value);
  return buf;
}

std::uint32_t read_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// A gzip (or plain) file opened for reading; read() fills as much as the file holds and turns
// zlib's errors into DataErrors.
class GzReader {
 public:
  explicit GzReader(const std::filesystem::path& path) : path_(path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) {
      fail(path, "cannot open: " + ec.message(), kMissingHint);  // a link loop, no permission
    }
    if (!std::filesystem::exists(status)) fail(path, "no such file", kMissingHint);
    if (std::filesystem::is_directory(status)) {
      fail(path, "is a directory, not an IDX file", kMissingHint);
    }
    errno = 0;
    file_ = gzopen(path.string().c_str(), "rb");
    if (file_ == nullptr) {
      const int err = errno;
      fail(path, std::string("cannot open: ") + (err != 0 ? std::strerror(err) : "out of memory"),
           kMissingHint);
    }
    gzbuffer(file_, 1 << 17);  // fewer system calls than zlib's 8 KiB default
  }
  ~GzReader() {
    if (file_ != nullptr) gzclose(file_);
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to `n` bytes; returns how many there were (fewer only at the end of the data).
  std::size_t read(std::uint8_t* out, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      // gzread takes an unsigned and returns an int: read in chunks well below INT_MAX.
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      const int got = gzread(file_, out + done, chunk);
      if (got < 0) {
        int errnum = 0;
        const char* msg = gzerror(file_, &errnum);
        fail(path_, std::string("damaged gzip data (zlib: ") + (msg != nullptr ? msg : "?") + ")",
             kDamagedHint);
      }
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    if (done < n) {
      // Z_BUF_ERROR: the input ended in the middle of a gzip stream (a cut-off download).
      int errnum = 0;
      gzerror(file_, &errnum);
      cut_off_gzip_ = errnum == Z_BUF_ERROR;
    }
    return done;
  }

  // Reads `n` bytes into `out`, growing it a chunk at a time as the data arrives, so a header
  // that promises far more than the file holds costs no more memory than the file. Returns how
  // many there were.
  std::size_t read_into(std::vector<std::uint8_t>& out, std::size_t n) {
    constexpr std::size_t kChunk = std::size_t{16} << 20;
    out.clear();
    while (out.size() < n) {
      const std::size_t want = std::min(kChunk, n - out.size());
      const std::size_t had = out.size();
      out.resize(had + want);
      const std::size_t got = read(out.data() + had, want);
      if (got < want) {
        out.resize(had + got);
        break;
      }
    }
    return out.size();
  }

  bool cut_off_gzip() const { return cut_off_gzip_; }
  // Whether anything follows what has been read.
  bool has_more() {
    std::uint8_t byte;
    return read(&byte, 1) == 1;
  }

 private:
  std::filesystem::path path_;
  gzFile file_ = nullptr;
  bool cut_off_gzip_ = false;
};

std::string cut_off_note(const GzReader& reader) {
  return reader.cut_off_gzip() ? " (the gzip stream is cut off)" : "";
}

// Reads the magic number and checks it. A file whose first two bytes are not zero is not IDX at
// all (and was not gzip either, or zlib would have unpacked it).
void check_magic(GzReader& reader, const std::filesystem::path& path, std::uint32_t expected) {
  std::array<std::uint8_t, 4> head{};
  const std::size_t got = reader.read(head.data(), head.size());
  if (got < head.size()) {
    if (got == 0 && !reader.cut_off_gzip()) fail(path, "the file is empty", kDamagedHint);
    fail(path,
         "truncated: the file ends after " + std::to_string(got) + " bytes, inside the IDX header" +
             cut_off_note(reader),
         kDamagedHint);
  }
  const std::uint32_t magic = read_be32(head.data());
  if (magic == expected) return;
  const char* expected_kind = expected == kImagesMagic ? "an IDX image file" : "an IDX label file";
  if (head[0] != 0 || head[1] != 0) {
    fail(path,
         "not a gzip/IDX file: it starts with bytes " + hex32(magic) + ", expected " +
             hex32(expected) + " (" + expected_kind + ")",
         kDamagedHint);
  }
  std::string what_it_is;
  if (magic == kImagesMagic) what_it_is = "; this is an IDX image file";
  if (magic == kLabelsMagic) what_it_is = "; this is an IDX label file";
  fail(path,
       "wrong magic number " + hex32(magic) + " (expected " + hex32(expected) + ", " +
           expected_kind + what_it_is + ")",
       kDamagedHint);
}

// Reads `count` big-endian 32-bit dimensions after the magic number.
std::array<std::uint32_t, 3> read_dims(GzReader& reader, const std::filesystem::path& path,
                                       std::size_t count) {
  std::array<std::uint8_t, 12> raw{};
  const std::size_t got = reader.read(raw.data(), 4 * count);
  if (got < 4 * count) {
    fail(path,
         "truncated: the file ends after " + std::to_string(4 + got) + " bytes, inside the " +
             std::to_string(4 + 4 * count) + "-byte IDX header" + cut_off_note(reader),
         kDamagedHint);
  }
  std::array<std::uint32_t, 3> dims{};
  for (std::size_t i = 0; i < count; ++i) dims[i] = read_be32(raw.data() + 4 * i);
  return dims;
}

void check_no_extra_data(GzReader& reader, const std::filesystem::path& path,
                         const std::string& promise) {
  if (reader.has_more()) {
    fail(path, "extra data after the " + promise + " the header promises", kDamagedHint);
  }
}

void load_images(const std::filesystem::path& path, Dataset& out) {
  GzReader reader(path);
  check_magic(reader, path, kImagesMagic);
  const auto dims = read_dims(reader, path, 3);
  const std::uint32_t n = dims[0], rows = dims[1], cols = dims[2];
  if (n == 0 || n > kMaxCount) {
    fail(path, "implausible header: " + std::to_string(n) + " images", kDamagedHint);
  }
  if (rows == 0 || cols == 0 || rows > kMaxSide || cols > kMaxSide) {
    fail(path,
         "implausible header: images of " + std::to_string(rows) + "x" + std::to_string(cols) +
             " pixels",
         kDamagedHint);
  }
  const std::uint64_t bytes = std::uint64_t{n} * rows * cols;
  const std::string promise = std::to_string(n) + " images of " + std::to_string(rows) + "x" +
                              std::to_string(cols) + " (" + std::to_string(bytes) + " bytes)";
  if (bytes > kMaxImageBytes) {
    fail(path, "implausible header: " + promise + ", more than 4 GiB", kDamagedHint);
  }
  out.rows = static_cast<int>(rows);
  out.cols = static_cast<int>(cols);
  const std::size_t got = reader.read_into(out.images, static_cast<std::size_t>(bytes));
  if (got < bytes) {
    fail(path,
         "truncated: header promises " + promise + " but the file ends after " +
             std::to_string(got) + " bytes of image data" + cut_off_note(reader),
         kDamagedHint);
  }
  check_no_extra_data(reader, path, std::to_string(n) + " images");
}

void load_labels(const std::filesystem::path& path, Dataset& out) {
  GzReader reader(path);
  check_magic(reader, path, kLabelsMagic);
  const std::uint32_t n = read_dims(reader, path, 1)[0];
  if (n == 0 || n > kMaxCount) {
    fail(path, "implausible header: " + std::to_string(n) + " labels", kDamagedHint);
  }
  const std::size_t got = reader.read_into(out.labels, n);
  if (got < n) {
    fail(path,
         "truncated: header promises " + std::to_string(n) + " labels but the file ends after " +
             std::to_string(got) + " of them" + cut_off_note(reader),
         kDamagedHint);
  }
  check_no_extra_data(reader, path, std::to_string(n) + " labels");
  for (std::size_t i = 0; i < out.labels.size(); ++i) {
    if (out.labels[i] > 9) {
      fail(path,
           "label " + std::to_string(out.labels[i]) + " at index " + std::to_string(i) +
               " is not a class 0..9",
           kDamagedHint);
    }
  }
}

// SplitMix64 (Steele, Lea and Flood): tiny, fast, and the same on every platform and standard
// library, which std::mt19937 + std::uniform_int_distribution is not.
std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t state) : state_(state) {}
  std::uint64_t next() { return mix64(state_ += 0x9E3779B97F4A7C15ull); }

  // Uniform in [0, range), range >= 1, without modulo bias: Lemire's multiply-shift, rejecting
  // the few low products that would favour some values.
  std::uint32_t below(std::uint32_t range) {
    std::uint64_t product = std::uint64_t{static_cast<std::uint32_t>(next() >> 32)} * range;
    auto low = static_cast<std::uint32_t>(product);
    if (low < range) {
      const std::uint32_t threshold = static_cast<std::uint32_t>(-range) % range;
      while (low < threshold) {
        product = std::uint64_t{static_cast<std::uint32_t>(next() >> 32)} * range;
        low = static_cast<std::uint32_t>(product);
      }
    }
    return static_cast<std::uint32_t>(product >> 32);
  }

 private:
  std::uint64_t state_;
};

}  // namespace

Dataset Dataset::head(std::size_t n) const {
  Dataset out;
  out.rows = rows;
  out.cols = cols;
  const std::size_t count = std::min(n, size());
  out.labels.assign(labels.begin(), labels.begin() + static_cast<std::ptrdiff_t>(count));
  out.images.assign(images.begin(),
                    images.begin() + static_cast<std::ptrdiff_t>(count * image_bytes()));
  return out;
}

Dataset load_idx_images_and_labels(const std::filesystem::path& images,
                                   const std::filesystem::path& labels) {
  Dataset out;
  load_images(images, out);
  load_labels(labels, out);
  const std::size_t num_images = out.images.size() / out.image_bytes();
  if (num_images != out.labels.size()) {
    fail(labels,
         "holds " + std::to_string(out.labels.size()) + " labels but " + images.string() +
             " holds " + std::to_string(num_images) +
             " images; the two files do not belong together",
         kDamagedHint);
  }
  return out;
}

FashionMnist load_fashion_mnist(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    fail(dir, "cannot open: " + ec.message(), kMissingHint);
  }
  if (!std::filesystem::exists(status)) {
    fail(dir, "no such directory: the Fashion-MNIST data is not there", kMissingHint);
  }
  if (!std::filesystem::is_directory(status)) {
    fail(dir, "not a directory (expected a folder holding the Fashion-MNIST files)", kMissingHint);
  }
  FashionMnist data;
  data.train = load_idx_images_and_labels(dir / "train-images-idx3-ubyte.gz",
                                          dir / "train-labels-idx1-ubyte.gz");
  data.test = load_idx_images_and_labels(dir / "t10k-images-idx3-ubyte.gz",
                                         dir / "t10k-labels-idx1-ubyte.gz");
  // The models take Fashion-MNIST's 28x28 images; any other size would only fail later, in a
  // layer, without naming the file.
  for (const auto& [set, file] : {std::pair{&data.train, "train-images-idx3-ubyte.gz"},
                                  std::pair{&data.test, "t10k-images-idx3-ubyte.gz"}}) {
    if (set->rows != kFashionMnistSide || set->cols != kFashionMnistSide) {
      fail(dir / file,
           "holds images of " + std::to_string(set->rows) + "x" + std::to_string(set->cols) +
               " pixels; Fashion-MNIST's, which the models take, are 28x28",
           kDamagedHint);
    }
  }
  return data;
}

const char* fashion_mnist_class_name(int label) {
  static constexpr std::array<const char*, 10> kNames = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  if (label < 0 || label >= static_cast<int>(kNames.size())) return "?";
  return kNames[static_cast<std::size_t>(label)];
}

std::vector<std::uint32_t> shuffled_indices(std::size_t n, std::uint64_t seed, int epoch) {
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument("shuffled_indices: n = " + std::to_string(n) +
                                " does not fit 32-bit indices");
  }
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(i);
  // Seed and epoch are each scrambled before they meet, so neighbouring seeds and epochs give
  // unrelated streams (a plain seed + epoch would make (s, e+1) replay (s+1, e)).
  const auto epoch_bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(epoch));
  SplitMix64 rng(mix64(seed) ^ mix64(epoch_bits * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull));
  // Fisher-Yates: position i takes a uniformly chosen element of the not-yet-placed prefix.
  for (std::size_t i = n; i > 1; --i) {
    const std::uint32_t j = rng.below(static_cast<std::uint32_t>(i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

}  // namespace mirrorlab::core
