// IDX reading on small files written here (gzipped and plain): the round trip, and every kind of
// damage giving a DataError that names the file and the problem. Seeded shuffling. The real
// Fashion-MNIST from dataset-fashion-mnist when it is installed.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/io/dataset.h"
#include "tests/support/temp_folder.h"

namespace mirrorlab::core {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

using TempDir = mirrorlab::testing::TempFolder;

void put_be32(Bytes& out, std::uint32_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 24));
  out.push_back(static_cast<std::uint8_t>(v >> 16));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}

Bytes idx_images(std::uint32_t n, std::uint32_t rows, std::uint32_t cols, const Bytes& pixels,
                 std::uint32_t magic = 0x00000803) {
  Bytes out;
  put_be32(out, magic);
  put_be32(out, n);
  put_be32(out, rows);
  put_be32(out, cols);
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

Bytes idx_labels(const Bytes& labels, std::uint32_t magic = 0x00000801) {
  Bytes out;
  put_be32(out, magic);
  put_be32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

void write_plain(const fs::path& path, const Bytes& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

void write_gz(const fs::path& path, const Bytes& bytes) {
  gzFile f = gzopen(path.string().c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

// Pixels with a recognisable pattern: image i, pixel p has value (31*i + p) mod 256.
Bytes pattern_pixels(std::size_t n, std::size_t pixels_per_image) {
  Bytes out(n * pixels_per_image);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t p = 0; p < pixels_per_image; ++p) {
      out[i * pixels_per_image + p] = static_cast<std::uint8_t>((31 * i + p) % 256);
    }
  }
  return out;
}

// Runs `load` and checks that it throws a DataError whose message holds every one of `parts`.
void expect_data_error(const std::function<void()>& load,
                       std::initializer_list<std::string> parts) {
  try {
    load();
    ADD_FAILURE() << "no DataError thrown";
  } catch (const DataError& e) {
    const std::string msg = e.what();
    for (const auto& part : parts) {
      EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
    }
  }
}

// A pair of good files: 5 images of 3x2 and labels 0..4, in the given directory.
struct GoodPair {
  fs::path images, labels;
};
GoodPair write_good_pair(const TempDir& dir, bool gzip) {
  GoodPair pair{dir / (gzip ? "img.gz" : "img.idx"), dir / (gzip ? "lab.gz" : "lab.idx")};
  const Bytes images = idx_images(5, 3, 2, pattern_pixels(5, 6));
  const Bytes labels = idx_labels({0, 1, 2, 3, 9});
  if (gzip) {
    write_gz(pair.images, images);
    write_gz(pair.labels, labels);
  } else {
    write_plain(pair.images, images);
    write_plain(pair.labels, labels);
  }
  return pair;
}

void expect_good_round_trip(const Dataset& d) {
  EXPECT_EQ(d.rows, 3);
  EXPECT_EQ(d.cols, 2);
  EXPECT_EQ(d.size(), 5u);
  EXPECT_EQ(d.image_bytes(), 6u);
  EXPECT_EQ(d.images, pattern_pixels(5, 6));
  EXPECT_EQ(d.labels, (Bytes{0, 1, 2, 3, 9}));
  EXPECT_EQ(d.image(2)[0], 62);   // 31*2 + 0
  EXPECT_EQ(d.image(4)[5], 129);  // 31*4 + 5
}

// ---- Good files. ----

TEST(Idx, GzipRoundTrip) {
  TempDir dir;
  const GoodPair pair = write_good_pair(dir, /*gzip=*/true);
  expect_good_round_trip(load_idx_images_and_labels(pair.images, pair.labels));
}

TEST(Idx, PlainRoundTrip) {
  TempDir dir;
  const GoodPair pair = write_good_pair(dir, /*gzip=*/false);
  expect_good_round_trip(load_idx_images_and_labels(pair.images, pair.labels));
}

TEST(Idx, MixedGzipAndPlain) {
  TempDir dir;
  const GoodPair gz = write_good_pair(dir, true);
  const GoodPair plain = write_good_pair(dir, false);
  expect_good_round_trip(load_idx_images_and_labels(gz.images, plain.labels));
  expect_good_round_trip(load_idx_images_and_labels(plain.images, gz.labels));
}

TEST(Dataset, Head) {
  TempDir dir;
  const GoodPair pair = write_good_pair(dir, true);
  const Dataset d = load_idx_images_and_labels(pair.images, pair.labels);
  const Dataset h = d.head(2);
  EXPECT_EQ(h.rows, 3);
  EXPECT_EQ(h.cols, 2);
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.labels, (Bytes{0, 1}));
  EXPECT_EQ(h.images, Bytes(d.images.begin(), d.images.begin() + 12));
  const Dataset all = d.head(100);
  EXPECT_EQ(all.size(), 5u);
  EXPECT_EQ(all.images, d.images);
  EXPECT_EQ(all.labels, d.labels);
  const Dataset none = d.head(0);
  EXPECT_EQ(none.size(), 0u);
  EXPECT_TRUE(none.images.empty());
}

// ---- Damaged files. ----

TEST(Idx, WrongMagicNumber) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  // A label file where the images should be, and vice versa.
  expect_data_error([&] { load_idx_images_and_labels(good.labels, good.labels); },
                    {good.labels.string(), "wrong magic number", "0x00000801", "0x00000803"});
  expect_data_error([&] { load_idx_images_and_labels(good.images, good.images); },
                    {good.images.string(), "wrong magic number", "0x00000803", "0x00000801"});
  // A magic number that is no IDX type at all.
  const fs::path odd = dir / "odd-images.gz";
  write_gz(odd, idx_images(5, 3, 2, pattern_pixels(5, 6), 0x00000D03));
  expect_data_error([&] { load_idx_images_and_labels(odd, good.labels); },
                    {odd.string(), "wrong magic number 0x00000D03", "reinstall"});
}

TEST(Idx, TruncatedImageData) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  Bytes pixels = pattern_pixels(5, 6);
  pixels.resize(27);  // four and a half images
  const fs::path short_images = dir / "short-images.gz";
  write_gz(short_images, idx_images(5, 3, 2, pixels));
  expect_data_error([&] { load_idx_images_and_labels(short_images, good.labels); },
                    {short_images.string(), "truncated", "5 images of 3x2 (30 bytes)", "27 bytes",
                     "apt-get install --reinstall dataset-fashion-mnist"});
}

TEST(Idx, TruncatedLabelData) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, false);
  Bytes labels = idx_labels({0, 1, 2, 3, 4});
  labels.pop_back();
  const fs::path short_labels = dir / "short-labels.idx";
  write_plain(short_labels, labels);
  expect_data_error([&] { load_idx_images_and_labels(good.images, short_labels); },
                    {short_labels.string(), "truncated", "5 labels"});
}

TEST(Idx, CutOffGzipStream) {
  // A download that stopped half way: the gzip stream itself is cut.
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  const std::size_t n = 200, side = 28;
  Bytes pixels(n * side * side);
  std::mt19937 rng(7);  // incompressible pixels, so half the .gz is about half the data
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng());
  const fs::path full = dir / "full.gz";
  write_gz(full, idx_images(n, side, side, pixels));
  std::ifstream in(full, std::ios::binary);
  Bytes gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gz.resize(gz.size() / 2);
  const fs::path cut = dir / "cut-images.gz";
  write_plain(cut, gz);
  expect_data_error([&] { load_idx_images_and_labels(cut, good.labels); },
                    {cut.string(), "truncated", "200 images of 28x28"});
}

TEST(Idx, TruncatedHeader) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  Bytes header = idx_images(5, 3, 2, {});
  header.resize(10);  // magic, count and half of the rows
  const fs::path short_header = dir / "short-header.gz";
  write_gz(short_header, header);
  expect_data_error([&] { load_idx_images_and_labels(short_header, good.labels); },
                    {short_header.string(), "truncated", "header"});
  const fs::path two_bytes = dir / "two-bytes.idx";
  write_plain(two_bytes, {0, 0});
  expect_data_error([&] { load_idx_images_and_labels(two_bytes, good.labels); },
                    {two_bytes.string(), "truncated", "header"});
}

TEST(Idx, EmptyFile) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  const fs::path empty = dir / "empty.gz";
  write_plain(empty, {});
  expect_data_error([&] { load_idx_images_and_labels(empty, good.labels); },
                    {empty.string(), "empty"});
}

TEST(Idx, ExtraData) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  const fs::path long_images = dir / "long-images.gz";
  write_gz(long_images, idx_images(5, 3, 2, pattern_pixels(6, 6)));
  expect_data_error([&] { load_idx_images_and_labels(long_images, good.labels); },
                    {long_images.string(), "extra data", "5 images"});
  const fs::path long_labels = dir / "long-labels.idx";
  Bytes labels = idx_labels({0, 1, 2, 3, 4});
  labels.push_back(5);
  write_plain(long_labels, labels);
  expect_data_error([&] { load_idx_images_and_labels(good.images, long_labels); },
                    {long_labels.string(), "extra data", "5 labels"});
}

TEST(Idx, ImageAndLabelCountsDiffer) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  const fs::path four_labels = dir / "four-labels.gz";
  write_gz(four_labels, idx_labels({0, 1, 2, 3}));
  expect_data_error([&] { load_idx_images_and_labels(good.images, four_labels); },
                    {four_labels.string(), good.images.string(), "4 labels", "5 images"});
}

TEST(Idx, LabelOutOfRange) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  const fs::path bad_labels = dir / "bad-labels.gz";
  write_gz(bad_labels, idx_labels({0, 1, 10, 3, 4}));
  expect_data_error([&] { load_idx_images_and_labels(good.images, bad_labels); },
                    {bad_labels.string(), "label 10", "index 2"});
}

TEST(Idx, ImplausibleDimensions) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  const fs::path zero_rows = dir / "zero-rows.gz";
  write_gz(zero_rows, idx_images(5, 0, 2, {}));
  expect_data_error([&] { load_idx_images_and_labels(zero_rows, good.labels); },
                    {zero_rows.string(), "implausible", "0x2"});
  const fs::path huge_rows = dir / "huge-rows.gz";
  write_gz(huge_rows, idx_images(5, 200000, 2, {}));
  expect_data_error([&] { load_idx_images_and_labels(huge_rows, good.labels); },
                    {huge_rows.string(), "implausible", "200000x2"});
  const fs::path no_images = dir / "no-images.gz";
  write_gz(no_images, idx_images(0, 3, 2, {}));
  expect_data_error([&] { load_idx_images_and_labels(no_images, good.labels); },
                    {no_images.string(), "0 images"});
}

TEST(Idx, MissingFile) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  const fs::path missing = dir / "no-such-images.gz";
  expect_data_error([&] { load_idx_images_and_labels(missing, good.labels); },
                    {missing.string(), "no such file", "apt-get install dataset-fashion-mnist"});
  expect_data_error([&] { load_idx_images_and_labels(good.images, missing); },
                    {missing.string(), "no such file"});
  expect_data_error([&] { load_idx_images_and_labels(dir.path(), good.labels); },
                    {dir.path().string(), "directory"});
}

TEST(Idx, GarbageIsNotGzipOrIdx) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  const fs::path text = dir / "text-images.gz";
  const std::string words = "<html>404 Not Found</html> and then some more bytes";
  write_plain(text, Bytes(words.begin(), words.end()));
  expect_data_error([&] { load_idx_images_and_labels(text, good.labels); },
                    {text.string(), "not a gzip/IDX file", "reinstall"});
  // Bytes that start like gzip but are not: zlib's own complaint comes through.
  const fs::path fake_gz = dir / "fake-images.gz";
  Bytes fake = {0x1f, 0x8b};
  std::mt19937 rng(11);
  for (int i = 0; i < 200; ++i) fake.push_back(static_cast<std::uint8_t>(rng()));
  write_plain(fake_gz, fake);
  expect_data_error([&] { load_idx_images_and_labels(fake_gz, good.labels); },
                    {fake_gz.string(), "gzip"});
}

// ---- The Fashion-MNIST folder. ----

TEST(FashionMnist, MissingDirectorySaysHowToInstall) {
  TempDir dir;
  const fs::path nowhere = dir / "not-here";
  expect_data_error([&] { load_fashion_mnist(nowhere); },
                    {nowhere.string(), "sudo apt-get install dataset-fashion-mnist"});
}

TEST(FashionMnist, LoadsAFolderOfSmallFiles) {
  TempDir dir;
  constexpr std::size_t kPixels = 28 * 28;
  write_gz(dir / "train-images-idx3-ubyte.gz", idx_images(5, 28, 28, pattern_pixels(5, kPixels)));
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels({0, 1, 2, 3, 9}));
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(2, 28, 28, pattern_pixels(2, kPixels)));
  expect_data_error([&] { load_fashion_mnist(dir.path()); },
                    {"t10k-labels-idx1-ubyte.gz", "no such file"});
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", idx_labels({7, 8}));
  const FashionMnist data = load_fashion_mnist(dir.path());
  EXPECT_EQ(data.train.size(), 5u);
  EXPECT_EQ(data.train.images, pattern_pixels(5, kPixels));
  EXPECT_EQ(data.test.size(), 2u);
  EXPECT_EQ(data.test.labels, (Bytes{7, 8}));
  EXPECT_EQ(data.test.images, pattern_pixels(2, kPixels));
}

// The models take 28x28 images: any other size is refused when loading, naming the file, instead
// of failing later inside a layer.
TEST(FashionMnist, RefusesImagesOfAnotherSizeNamingTheFile) {
  for (const auto& [train_side, test_side] :
       {std::pair{7u, 28u}, std::pair{1u, 28u}, std::pair{28u, 7u}, std::pair{28u, 29u}}) {
    TempDir dir;
    write_gz(dir / "train-images-idx3-ubyte.gz",
             idx_images(2, train_side, train_side, pattern_pixels(2, train_side * train_side)));
    write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels({0, 1}));
    write_gz(dir / "t10k-images-idx3-ubyte.gz",
             idx_images(1, test_side, test_side, pattern_pixels(1, test_side * test_side)));
    write_gz(dir / "t10k-labels-idx1-ubyte.gz", idx_labels({7}));
    const unsigned bad = train_side != 28 ? train_side : test_side;
    const std::string file =
        train_side != 28 ? "train-images-idx3-ubyte.gz" : "t10k-images-idx3-ubyte.gz";
    expect_data_error([&] { load_fashion_mnist(dir.path()); },
                      {(dir / file).string(),
                       std::to_string(bad) + "x" + std::to_string(bad) + " pixels", "28x28"});
  }
}

// A header that promises 5,000,000 images in a 16 KB file is found truncated as the data runs
// out, without first allocating the 3.9 GB it promises: the load runs in a child process whose
// address space is capped 512 MiB above what it uses, where such an allocation would fail.
TEST(Idx, AHeaderPromisingMillionsInATinyFileCostsNoMoreThanTheFile) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers reserve terabytes of address space: an RLIMIT_AS cannot apply";
#endif
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  const fs::path liar = dir / "liar.gz";
  write_gz(liar, idx_images(5000000, 28, 28, pattern_pixels(20, 28 * 28)));  // 15.7 KB of pixels
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::size_t used_kb = 0;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmSize:", 0) == 0) used_kb = std::stoul(line.substr(7));
    }
    const rlimit cap{(used_kb << 10) + (std::size_t{512} << 20),
                     (used_kb << 10) + (std::size_t{512} << 20)};
    setrlimit(RLIMIT_AS, &cap);
    try {
      load_idx_images_and_labels(liar, good.labels);
      _exit(3);  // loaded: cannot be
    } catch (const DataError& e) {
      const std::string what = e.what();
      _exit(what.find("truncated") != std::string::npos &&
                    what.find("5000000 images") != std::string::npos
                ? 0
                : 4);
    } catch (const std::bad_alloc&) {
      _exit(2);  // allocated what the header promised
    } catch (...) {
      _exit(5);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: the header's 3.9 GB were allocated; 4: the message "
                                       "does not say truncated and what the header promised";
}

TEST(Idx, ALinkLoopGivesTheSystemsReasonNotNoSuchFile) {
  TempDir dir;
  const GoodPair good = write_good_pair(dir, true);
  fs::create_symlink(dir / "b.gz", dir / "a.gz");
  fs::create_symlink(dir / "a.gz", dir / "b.gz");
  expect_data_error([&] { load_idx_images_and_labels(dir / "a.gz", good.labels); },
                    {(dir / "a.gz").string(), "Too many levels of symbolic links"});
  fs::create_symlink(dir / "loop-dir", dir / "loop-dir");
  expect_data_error([&] { load_fashion_mnist(dir / "loop-dir"); },
                    {"Too many levels of symbolic links"});
}

TEST(FashionMnist, ClassNames) {
  EXPECT_STREQ(fashion_mnist_class_name(0), "T-shirt/top");
  EXPECT_STREQ(fashion_mnist_class_name(1), "Trouser");
  EXPECT_STREQ(fashion_mnist_class_name(2), "Pullover");
  EXPECT_STREQ(fashion_mnist_class_name(3), "Dress");
  EXPECT_STREQ(fashion_mnist_class_name(4), "Coat");
  EXPECT_STREQ(fashion_mnist_class_name(5), "Sandal");
  EXPECT_STREQ(fashion_mnist_class_name(6), "Shirt");
  EXPECT_STREQ(fashion_mnist_class_name(7), "Sneaker");
  EXPECT_STREQ(fashion_mnist_class_name(8), "Bag");
  EXPECT_STREQ(fashion_mnist_class_name(9), "Ankle boot");
  EXPECT_STREQ(fashion_mnist_class_name(-1), "?");
  EXPECT_STREQ(fashion_mnist_class_name(10), "?");
}

TEST(FashionMnist, InstalledPackage) {
  const fs::path dir = kDefaultFashionMnistDir;
  if (!fs::is_directory(dir)) {
    GTEST_SKIP() << dir << " is not there (sudo apt-get install dataset-fashion-mnist)";
  }
  const FashionMnist data = load_fashion_mnist(dir);
  ASSERT_EQ(data.train.size(), 60000u);
  ASSERT_EQ(data.test.size(), 10000u);
  EXPECT_EQ(data.train.rows, 28);
  EXPECT_EQ(data.train.cols, 28);
  EXPECT_EQ(data.test.rows, 28);
  EXPECT_EQ(data.test.cols, 28);
  EXPECT_EQ(data.train.images.size(), 60000u * 784);
  EXPECT_EQ(data.test.images.size(), 10000u * 784);
  std::array<int, 10> train_counts{}, test_counts{};
  for (const auto label : data.train.labels) ++train_counts[label];
  for (const auto label : data.test.labels) ++test_counts[label];
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(train_counts[c], 6000) << fashion_mnist_class_name(c);
    EXPECT_EQ(test_counts[c], 1000) << fashion_mnist_class_name(c);
  }
}

// ---- Shuffling. ----

bool is_permutation_of_iota(const std::vector<std::uint32_t>& order) {
  std::vector<std::uint32_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != i) return false;
  }
  return true;
}

TEST(Shuffle, IsAPermutation) {
  for (const std::size_t n : {2u, 3u, 10u, 1000u, 60000u}) {
    const auto order = shuffled_indices(n, 42, 0);
    ASSERT_EQ(order.size(), n);
    EXPECT_TRUE(is_permutation_of_iota(order)) << n;
  }
}

TEST(Shuffle, DependsOnlyOnSeedAndEpoch) {
  EXPECT_EQ(shuffled_indices(1000, 42, 3), shuffled_indices(1000, 42, 3));
  EXPECT_NE(shuffled_indices(1000, 42, 3), shuffled_indices(1000, 42, 4));
  EXPECT_NE(shuffled_indices(1000, 42, 3), shuffled_indices(1000, 43, 3));
  // Neighbouring seeds and epochs do not replay each other's orders.
  EXPECT_NE(shuffled_indices(1000, 42, 4), shuffled_indices(1000, 43, 3));
  EXPECT_NE(shuffled_indices(1000, 0, 0), shuffled_indices(1000, 0, 1));
}

TEST(Shuffle, ActuallyShuffles) {
  const auto order = shuffled_indices(1000, 1, 0);
  std::vector<std::uint32_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0u);
  EXPECT_NE(order, identity);
  // A fair shuffle leaves about one element in place; far more would mean a broken shuffle.
  int fixed = 0;
  for (std::size_t i = 0; i < order.size(); ++i) fixed += order[i] == i;
  EXPECT_LT(fixed, 10);
}

TEST(Shuffle, IsRoughlyUniform) {
  // Where element 0 lands over many epochs: each of 4 places about a quarter of the time.
  std::array<int, 4> where{};
  const int trials = 4000;
  for (int epoch = 0; epoch < trials; ++epoch) {
    const auto order = shuffled_indices(4, 99, epoch);
    for (std::size_t i = 0; i < 4; ++i) {
      if (order[i] == 0) ++where[i];
    }
  }
  for (const int count : where) {
    EXPECT_GT(count, 850);
    EXPECT_LT(count, 1150);
  }
}

TEST(Shuffle, TinySizes) {
  EXPECT_TRUE(shuffled_indices(0, 5, 0).empty());
  EXPECT_EQ(shuffled_indices(1, 5, 0), (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(shuffled_indices(1, 5, 7), (std::vector<std::uint32_t>{0}));
}

}  // namespace
}  // namespace mirrorlab::core
