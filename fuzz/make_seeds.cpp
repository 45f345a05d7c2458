// Writes the seed inputs of the binary formats (fuzz/README.md): small IDX pairs, safetensors
// files and checkpoints, each a valid file (or a pair that differs from one in one way), so the
// fuzzer starts from inputs that reach deep into each reader. The lesson and topology seeds are
// the course's lessons and the presets, copied as they are.
//   cmake --build build --target fuzz_make_seeds && build/fuzz/fuzz_make_seeds fuzz/corpus
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/safetensors.h"
#include "fuzz/fuzz_input.h"

namespace {

namespace fs = std::filesystem;
using namespace mirrorlab::core;

void write(const fs::path& file, const std::string& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
  std::printf("%s (%zu bytes)\n", file.c_str(), bytes.size());
}

std::string two(const std::string& first, const std::string& second) {
  return first + std::string(mirrorlab::fuzz::kNextFile) + second;
}

void put_be32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

std::string idx_images(std::uint32_t n, std::uint32_t rows, std::uint32_t cols) {
  std::string out;
  put_be32(out, 0x00000803);
  put_be32(out, n);
  put_be32(out, rows);
  put_be32(out, cols);
  for (std::uint32_t i = 0; i < n * rows * cols; ++i)
    out.push_back(static_cast<char>(i * 37 % 256));
  return out;
}

std::string idx_labels(std::uint32_t n) {
  std::string out;
  put_be32(out, 0x00000801);
  put_be32(out, n);
  for (std::uint32_t i = 0; i < n; ++i) out.push_back(static_cast<char>(i % 10));
  return out;
}

std::string gzipped(const std::string& bytes) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::string out(deflateBound(&z, bytes.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A checkpoint of a made-up two-tensor model: what the reader checks does not depend on the
// model, and a real one's weights would make seeds of a megabyte.
Checkpoint small_checkpoint(OptimizerKind optimizer, int epochs_done) {
  Checkpoint c;
  c.config.model = ModelKind::kMlp;
  c.config.optimizer.kind = optimizer;
  c.config.all_reduce = "auto";
  c.config.seed = 1;
  c.config.shuffle_seed = 2;
  c.config.epochs = 3;
  c.config.batch_per_replica = 4;
  c.config.replicas = 2;
  c.config.devices = {"/gpu:0", "/gpu:1"};
  c.config.train_examples = 20;
  c.config.train_crc32 = 12345;
  c.tensors = {{"dense/kernel", {2, 3}, 0, 6}, {"dense/bias", {3}, 6, 3}};
  for (int i = 0; i < 9; ++i) c.state.params.push_back(0.25f * static_cast<float>(i) - 1.0f);
  if (optimizer == OptimizerKind::kSgd) {
    c.state.slots.push_back({"momentum", std::vector<float>(9, 0.5f)});
  } else {
    c.state.slots.push_back({"m", std::vector<float>(9, 0.125f)});
    c.state.slots.push_back({"v", std::vector<float>(9, 0.0625f)});
  }
  c.state.progress.iterations = 3 * epochs_done + 1;
  for (int e = 1; e <= epochs_done; ++e) {
    EpochLog log;
    log.epoch = e;
    log.steps = 3;
    log.steps_per_epoch = 3;
    log.seconds = 0.5;
    log.train = {2.0 / e, 0.1 * e, 0.5, 20};
    log.has_validation = e == 1;
    log.validation = {2.5, 0.1, 0.4, 10};
    c.position.history.epochs.push_back(log);
  }
  c.position.history.steps = 3 * epochs_done + 1;
  c.position.epoch = epochs_done + 1;
  c.position.in_epoch = true;
  c.position.step_in_epoch = 1;
  c.position.examples_in_epoch = 8;
  c.position.running = {1.5, 3, 7, 8};
  c.order_crc32 = 777;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_FOLDER (fuzz/corpus)\n");
    return 2;
  }
  const fs::path corpus = argv[1];

  write(corpus / "idx" / "three-2x2-plain", two(idx_images(3, 2, 2), idx_labels(3)));
  write(corpus / "idx" / "two-28x28-gzipped",
        two(gzipped(idx_images(2, 28, 28)), gzipped(idx_labels(2))));
  write(corpus / "idx" / "images-and-labels-disagree", two(idx_images(3, 1, 3), idx_labels(2)));

  Safetensors st;
  st.metadata = {{"format", "pt"}};
  st.tensors = {{"a", {2, 2}, {1, 2, 3, 4}}, {"b", {3}, {-1, 0.5f, 8}}, {"empty", {0, 4}, {}}};
  write(corpus / "safetensors" / "three-tensors", write_safetensors(st));
  write(corpus / "safetensors" / "no-tensors", write_safetensors(Safetensors{}));

  const std::string weights_file = "ckpt-00000001.safetensors";  // fuzz_checkpoint.cpp's name
  for (const auto& [name, optimizer, epochs] :
       {std::tuple{"adam-in-epoch-1", OptimizerKind::kAdam, 0},
        std::tuple{"sgd-after-2-epochs", OptimizerKind::kSgd, 2}}) {
    const CheckpointBytes bytes =
        encode_checkpoint(small_checkpoint(optimizer, epochs), weights_file);
    write(corpus / "checkpoint" / name, two(bytes.state, bytes.weights));
  }
  return 0;
}
