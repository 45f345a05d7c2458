// The checkpoint files: safetensors weights any reader can take apart by hand, a JSON state with
// its checksum, and every damaged, truncated, foreign or newer file refused with a sentence that
// names it; the folder that keeps the newest N and touches nothing else.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/checkpoint_folder.h"
#include "core/checkpoint/safetensors.h"
#include "core/io/output_file.h"
#include "nlohmann/json.hpp"
#include "tests/support/checkpoint_rig.h"
#include "tests/support/temp_folder.h"

namespace mirrorlab {
namespace {

using json = nlohmann::json;
using testing_rig::FitRig;
using testing_rig::FitSetup;

core::Safetensors two_tensors() {
  core::Safetensors f;
  f.metadata = {{"format", "test"}};
  f.tensors.push_back({"a/kernel", {2, 3}, {1, 2, 3, 4, 5, -0.0f}});
  f.tensors.push_back({"a/bias", {3}, {0.5f, 1e-38f, 3.4e38f}});
  return f;
}

// The file taken apart as the format says, without mirrorlab's reader: what another tool sees.
TEST(Safetensors, TheBytesAreWhatTheFormatSays) {
  const std::string bytes = core::write_safetensors(two_tensors());
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data starts 8-byte aligned";
  const json header = json::parse(bytes.substr(8, n));
  EXPECT_EQ(header["__metadata__"]["format"], "test");
  EXPECT_EQ(header["a/kernel"]["dtype"], "F32");
  EXPECT_EQ(header["a/kernel"]["shape"], json({2, 3}));
  EXPECT_EQ(header["a/kernel"]["data_offsets"], json({0, 24}));
  EXPECT_EQ(header["a/bias"]["data_offsets"], json({24, 36}));
  ASSERT_EQ(bytes.size(), 8 + n + 36);
  float bias[3];
  std::memcpy(bias, bytes.data() + 8 + n + 24, sizeof bias);  // little-endian, as this host
  EXPECT_EQ(bias[2], 3.4e38f);
  const core::Safetensors back = core::parse_safetensors(bytes);
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors[0].name, "a/kernel");
  EXPECT_EQ(back.tensors[0].values, two_tensors().tensors[0].values);
  EXPECT_TRUE(std::signbit(back.tensors[0].values[5]));
  EXPECT_EQ(back.tensors[1].values, two_tensors().tensors[1].values);
}

// A tensor with a zero in its shape holds no values: the writer and the reader copied its no
// bytes with memcpy from and to a vector's null data(), undefined behaviour that the UBSan build
// stops at (found writing fuzz/corpus/safetensors/three-tensors).
TEST(Safetensors, AnEmptyTensorWritesAndReadsBack) {
  core::Safetensors f;
  f.tensors.push_back({"empty", {0, 4}, {}});
  f.tensors.push_back({"one", {1}, {2.5f}});
  const core::Safetensors back = core::parse_safetensors(core::write_safetensors(f));
  ASSERT_EQ(back.tensors.size(), 2u);
  EXPECT_EQ(back.tensors[0].name, "empty");
  EXPECT_EQ(back.tensors[0].shape, (std::vector<std::int64_t>{0, 4}));
  EXPECT_TRUE(back.tensors[0].values.empty());
  EXPECT_EQ(back.tensors[1].values, std::vector<float>{2.5f});
}

std::string with_header(const std::string& header, const std::string& data) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
  return bytes + header + data;
}

TEST(Safetensors, EveryMalformedFileIsRefusedWithWhatIsWrong) {
  const std::string good = core::write_safetensors(two_tensors());
  // Every prefix: a truncated file is an error, never a crash or a short read.
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW(core::parse_safetensors(good.substr(0, n)), core::SafetensorsError) << n;
  }
  const std::string data(12, '\0');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {with_header("{\"x\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,12]}}", data),
       "has dtype F16; mirrorlab reads F32"},
      {with_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,12]}}", data),
       "needs 16 bytes but its data_offsets give 12"},
      {with_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", data),
       "outside the 12 bytes of data"},
      {with_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                   "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                   data),
       "overlapping tensors"},
      {with_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", data),
       "a gap at byte 0"},
      {with_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", data),
       "4 bytes of data that no tensor names"},
      {with_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[-3],\"data_offsets\":[0,12]}}", data),
       "not a whole number >= 0"},
      {with_header("{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
                   "\"data_offsets\":[0,12]}}",
                   data),
       "needs more bytes"},
      {with_header("[1,2]", data), "not a JSON object"},
      {with_header("{\"x\":", data), "not JSON"},
      {with_header("{\"x\":[[[[[[1]]]]]]}", ""), "nested more than"},
      {std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10), "says its header is"},
  };
  for (const auto& [bytes, expected] : cases) {
    try {
      core::parse_safetensors(bytes);
      ADD_FAILURE() << "accepted: " << expected;
    } catch (const core::SafetensorsError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

// A small checkpoint of a real run, through its bytes.
struct Saved {
  Saved() : rig(setup()) {
    rig.run_to_end();
    checkpoint = rig.checkpoint();
    bytes = core::encode_checkpoint(checkpoint, "ckpt-00000005.safetensors");
  }
  static FitSetup setup() {
    FitSetup s;
    s.max_steps = 5;
    return s;
  }
  core::Checkpoint decode(const std::string& state, const std::string& weights) const {
    return core::decode_checkpoint(state, weights, "dir/ckpt-00000005.json",
                                   "dir/ckpt-00000005.safetensors");
  }
  FitRig rig;
  core::Checkpoint checkpoint;
  core::CheckpointBytes bytes;
};

// A changed state, with its checksum made right again (what a newer writer, or a careful hand,
// would produce).
std::string resealed(const std::string& state, const std::function<void(json&)>& change) {
  json j = json::parse(state);
  change(j);
  j.erase("checksum");
  j["checksum"] = core::crc32_of(j.dump());
  return j.dump(1);
}

// Version 1 (before the run's settings were one value) wrote them by hand: the optimizer as an
// object, "all_reduce", a shuffle seed of its own. Such a file is still read, to the same
// settings; the devices it did not keep are the defaults.
TEST(Checkpoint, AVersionOneStateIsStillRead) {
  const Saved saved;
  const std::string v1 = resealed(saved.bytes.state, [](json& j) {
    const json s = j["config"]["settings"];
    j["version"] = 1;
    j["config"] = {{"model", s["model"]},
                   {"optimizer",
                    {{"name", s["optimizer"]},
                     {"learning_rate", s["learning_rate"]},
                     {"momentum", s["momentum"]},
                     {"beta1", s["beta1"]},
                     {"beta2", s["beta2"]},
                     {"epsilon", s["epsilon"]}}},
                   {"loss_scaling", s["loss_scaling"]},
                   {"all_reduce", s["allreduce"]},
                   {"seed", s["seed"]},
                   {"shuffle_seed", s["seed"]},
                   {"epochs", s["epochs"]},
                   {"max_steps", s["max_steps"]},
                   {"batch_per_replica", s["batch_per_replica"]},
                   {"replicas", j["config"]["replicas"]},
                   {"devices", j["config"]["devices"]},
                   {"train_examples", s["train_examples"]},
                   {"train_crc32", j["config"]["train_crc32"]}};
  });
  const core::Checkpoint back = saved.decode(v1, saved.bytes.weights);
  core::RunSettings expected = saved.checkpoint.config.settings;
  expected.devices = core::DeviceSettings{};
  expected.workers = core::RunSettings{}.workers;
  EXPECT_TRUE(back.config.settings == expected);
  EXPECT_EQ(back.config.replicas, 3);
  testing_rig::expect_same_state(back.state, saved.checkpoint.state);
  // A shuffle seed other than the seed: this version cannot go on from it.
  const std::string other_shuffle = resealed(v1, [](json& j) { j["config"]["shuffle_seed"] = 99; });
  try {
    saved.decode(other_shuffle, saved.bytes.weights);
    ADD_FAILURE() << "accepted";
  } catch (const core::CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("\"config.shuffle_seed\" differs from \"seed\""),
              std::string::npos)
        << e.what();
  }
  const std::string bad_lr =
      resealed(v1, [](json& j) { j["config"]["optimizer"]["learning_rate"] = 99; });
  EXPECT_THROW(saved.decode(bad_lr, saved.bytes.weights), core::CheckpointError);
}

TEST(Checkpoint, TheStateIsReadableJsonAndEveryFieldComesBack) {
  const Saved saved;
  const json state = json::parse(saved.bytes.state);
  EXPECT_EQ(state["format"], "mirrorlab-checkpoint");
  EXPECT_EQ(state["version"], 2);
  EXPECT_EQ(state["step"], 5);
  EXPECT_EQ(state["config"]["settings"]["model"], "mlp");
  EXPECT_EQ(state["config"]["settings"]["optimizer"], "adam");
  EXPECT_EQ(state["config"]["settings"]["learning_rate"], 0.001);
  EXPECT_EQ(state["position"]["examples_in_epoch"], 60);
  EXPECT_EQ(state["weights"]["file"], "ckpt-00000005.safetensors");
  EXPECT_EQ(state["weights"]["slots"], json({"m", "v"}));
  const core::Checkpoint back = saved.decode(saved.bytes.state, saved.bytes.weights);
  testing_rig::expect_same_state(back.state, saved.checkpoint.state);
  testing_rig::expect_same_history(back.position.history, saved.checkpoint.position.history);
  EXPECT_EQ(back.position.running.loss_sum, saved.checkpoint.position.running.loss_sum);
  EXPECT_EQ(back.position.examples_in_epoch, 60u);
  EXPECT_EQ(back.config.train_crc32, saved.checkpoint.config.train_crc32);
  EXPECT_TRUE(back.config.settings == saved.checkpoint.config.settings);
  EXPECT_EQ(back.config.devices, (std::vector<std::string>{"/gpu:0", "/gpu:1", "/gpu:2"}));
  EXPECT_EQ(back.order_crc32, saved.checkpoint.order_crc32);
  ASSERT_EQ(back.tensors.size(), 6u);
  EXPECT_EQ(back.tensors[0].name, "dense/kernel");
  EXPECT_EQ(back.tensors[0].shape, (core::Shape{784, 256}));
  // The weights file holds the weights and the slots under names a reader can follow.
  const core::Safetensors weights = core::parse_safetensors(saved.bytes.weights);
  EXPECT_EQ(weights.tensors.size(), 18u);
  EXPECT_EQ(weights.tensors[6].name, "optimizer/m/dense/kernel");
  EXPECT_EQ(weights.metadata.at("model"), "mlp");
}

TEST(Checkpoint, DamagedTruncatedForeignAndNewerFilesAreRefusedNamingTheFile) {
  const Saved saved;
  const std::string& state = saved.bytes.state;
  const std::string& weights = saved.bytes.weights;
  std::string flipped_state = state;
  const std::size_t digit = flipped_state.find("\"examples_in_epoch\": 60") + 21;
  flipped_state[digit] = '7';  // 60 -> 70: still JSON, still a number
  std::string flipped_weights = weights;
  flipped_weights[weights.size() / 2] ^= 0x01;
  // A weights file whole and sealed, but with no model in its header's __metadata__.
  core::Safetensors unnamed = core::parse_safetensors(weights);
  unnamed.metadata.erase("model");
  const std::string unnamed_weights = core::write_safetensors(unnamed);
  const std::string unnamed_state = resealed(state, [&](json& j) {
    j["weights"]["bytes"] = unnamed_weights.size();
    j["weights"]["crc32"] = core::crc32_of(unnamed_weights);
  });
  const std::vector<std::tuple<const char*, std::string, std::string, std::string>> cases = {
      {"weights that name no model", unnamed_state, unnamed_weights,
       "dir/ckpt-00000005.safetensors: names no model in its header's __metadata__"},
      {"a truncated state", state.substr(0, state.size() / 2), weights,
       "dir/ckpt-00000005.json: is not valid JSON (truncated or damaged?)"},
      {"a changed number in the state", flipped_state, weights,
       "dir/ckpt-00000005.json: is damaged: its checksum says"},
      {"a truncated weights file", state, weights.substr(0, weights.size() - 4),
       "dir/ckpt-00000005.safetensors: holds " + std::to_string(weights.size() - 4) +
           " bytes; the checkpoint ckpt-00000005.json says " + std::to_string(weights.size()) +
           " (truncated)"},
      {"a changed weight", state, flipped_weights,
       "dir/ckpt-00000005.safetensors: is damaged: its CRC-32 is"},
      {"a newer format", resealed(state, [](json& j) { j["version"] = 3; }), weights,
       "was written in checkpoint format version 3; this mirrorlab reads versions 1 to 2"},
      {"another format", "{\"format\": \"keras\"}", weights, "is not a mirrorlab checkpoint"},
      {"a missing field", resealed(state, [](json& j) { j["position"].erase("epoch"); }), weights,
       "\"position.epoch\" is missing"},
      {"a field of the wrong kind",
       resealed(state, [](json& j) { j["config"]["settings"]["epochs"] = "many"; }), weights,
       "\"config.settings.epochs\" is not a whole number: give a whole number from 1 to 1000"},
      {"an unknown optimizer",
       resealed(state, [](json& j) { j["config"]["settings"]["optimizer"] = "lion"; }), weights,
       "\"config.settings.optimizer\" is 'lion', not one of sgd, adam or nadam"},
      {"a setting missing",
       resealed(state, [](json& j) { j["config"]["settings"].erase("momentum"); }), weights,
       "\"config.settings.momentum\" is missing"},
      {"a setting this mirrorlab does not know",
       resealed(state, [](json& j) { j["config"]["settings"]["warp"] = 9; }), weights,
       "\"config.settings.warp\" is not a setting this mirrorlab knows"},
      {"another weights file", resealed(state, [](json& j) { j["weights"]["file"] = "x"; }),
       weights, "names x, not ckpt-00000005.safetensors"},
      {"a tensor it lacks",
       resealed(state, [](json& j) { j["weights"]["tensors"][0]["name"] = "dense/kernel2"; }),
       weights, "has no tensor \"dense/kernel2\""},
      {"another shape",
       resealed(state,
                [](json& j) {
                  j["weights"]["tensors"][0]["shape"] = {256, 784};
                }),
       weights, "tensor \"dense/kernel\" has shape [784, 256]; ckpt-00000005.json says [256, 784]"},
      {"a deeply nested state", std::string(200, '[') + std::string(200, ']'), weights,
       "nested more than"},
  };
  for (const auto& [what, s, w, expected] : cases) {
    SCOPED_TRACE(what);
    try {
      saved.decode(s, w);
      ADD_FAILURE() << "accepted";
    } catch (const core::CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  // Every prefix of the state (short of its closing brace and newline), and a sample of the
  // weights' prefixes: a CheckpointError and nothing else.
  ASSERT_EQ(state.substr(state.size() - 2), "}\n");
  for (std::size_t n = 0; n + 2 < state.size(); ++n) {
    EXPECT_THROW(saved.decode(state.substr(0, n), weights), core::CheckpointError) << n;
  }
  for (std::size_t n = 0; n < weights.size(); n += weights.size() / 97 + 1) {
    EXPECT_THROW(saved.decode(state, weights.substr(0, n)), core::CheckpointError) << n;
  }
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CheckpointFolder, KeepsTheNewestNAndNothingElseOfItsOwn) {
  testing::TempFolder temp("checkpoints");
  const std::filesystem::path dir = temp / "run";
  core::CheckpointFolder folder(dir);
  folder.prepare();  // creates it
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_TRUE(folder.list().empty());
  EXPECT_THROW(folder.newest(), core::CheckpointError);
  core::write_file_whole(dir / "notes.txt", "mine");
  core::write_file_whole(dir / "ckpt-00000099.safetensors", "an orphan: no state beside it");

  FitSetup setup;
  setup.max_steps = 0;
  FitRig rig(setup);
  for (int i = 0; i < 4; ++i) {
    rig.loop->step();
    const core::CheckpointEntry e = folder.save(rig.checkpoint(), /*keep=*/2);
    EXPECT_EQ(e.state.filename(), "ckpt-0000000" + std::to_string(i + 1) + ".json");
  }
  const std::vector<core::CheckpointEntry> kept = folder.list();
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].step, 3);
  EXPECT_EQ(kept[1].step, 4);
  EXPECT_FALSE(std::filesystem::exists(dir / "ckpt-00000001.safetensors"));
  EXPECT_EQ(read_file(dir / "notes.txt"), "mine");
  EXPECT_TRUE(std::filesystem::exists(dir / "ckpt-00000099.safetensors"));
  EXPECT_EQ(folder.newest().step, 4);
  const core::Checkpoint back = folder.load(folder.newest());
  testing_rig::expect_same_state(back.state, rig.strategy->state());
  // No temporary file is left behind.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
  }
  // A state whose weights file went missing is refused, naming the missing file.
  std::filesystem::remove(kept[1].weights);
  try {
    folder.load(folder.newest());
    ADD_FAILURE() << "loaded without its weights";
  } catch (const core::CheckpointError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "ckpt-00000004.safetensors").string() + ": is missing");
  }
}

TEST(CheckpointFolder, AFileWhereTheFolderShouldBeIsRefused) {
  testing::TempFolder temp("checkpoints");
  core::write_file_whole(temp / "file", "x");
  EXPECT_THROW(core::CheckpointFolder(temp / "file").prepare(), core::OutputFileError);
  EXPECT_THROW(core::CheckpointFolder(temp / "file").list(), core::CheckpointError);
}

// A link to a folder that is not there said "cannot be created: File exists".
TEST(CheckpointFolder, ALinkToAMissingFolderSaysSo) {
  testing::TempFolder temp("checkpoints");
  std::filesystem::create_directory_symlink(temp / "nowhere", temp / "ck");
  try {
    core::CheckpointFolder(temp / "ck").prepare();
    ADD_FAILURE() << "accepted";
  } catch (const core::OutputFileError& e) {
    EXPECT_NE(std::string(e.what()).find("is a symbolic link to " + (temp / "nowhere").string() +
                                         ", which does not exist"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mirrorlab
