#include "core/checkpoint/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/checkpoint/safetensors.h"
#include "core/checkpoint/shallow_json.h"
#include "files/field_words.h"
#include "files/json_fields.h"
#include "nlohmann/json.hpp"

namespace mirrorlab::core {
namespace {

using json = nlohmann::json;
using files::JsonFields;
using files::JsonList;
namespace field_words = files::field_words;

constexpr const char* kSlotPrefix = "optimizer/";

// Doubles that may not be finite (a validation loss can overflow) are kept exactly: finite ones
// as JSON numbers (nlohmann writes the shortest text that reads back to the same bits), the
// others as "nan", "inf", "-inf".
json real(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

json metrics_json(const Metrics& m) {
  return {{"loss", real(m.loss)},
          {"accuracy", real(m.accuracy)},
          {"top5_accuracy", real(m.top5_accuracy)},
          {"examples", m.examples}};
}

json history_json(const History& h) {
  json epochs = json::array();
  for (const EpochLog& e : h.epochs) {
    epochs.push_back({{"epoch", e.epoch},
                      {"steps", e.steps},
                      {"steps_per_epoch", e.steps_per_epoch},
                      {"seconds", real(e.seconds)},
                      {"train", metrics_json(e.train)},
                      {"validation", e.has_validation ? metrics_json(e.validation) : json()}});
  }
  json growth;
  if (h.loss_growth) {
    growth = {{"step", h.loss_growth->step},
              {"first_loss", real(h.loss_growth->first_loss)},
              {"loss", real(h.loss_growth->loss)}};
  }
  return {{"epochs", epochs},
          {"steps", h.steps},
          {"final_train_loss", real(h.final_train_loss)},
          {"first_step_loss", real(h.first_step_loss)},
          {"train_seconds", real(h.train_seconds)},
          {"train_examples", h.train_examples},
          {"loss_growth", growth}};
}

// Every field's refusal names the field ("position.epoch") and the state file.
files::FieldFailure damaged(const std::filesystem::path& file) {
  return [&file](const std::string& name, const std::string& problem) {
    throw CheckpointError(file, (name.empty() ? "the state" : "\"" + name + "\"") + " " + problem +
                                    " (the file is damaged, or not mirrorlab's)");
  };
}

// A double as real() writes it: a number, or "nan", "inf", "-inf".
double read_real(const JsonFields& f, const std::string& key) {
  const json& v = f.at(key);
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  f.fail(key, field_words::not_number());
}

double read_finite(const JsonFields& f, const std::string& key) {
  const double v = read_real(f, key);
  if (!std::isfinite(v)) f.fail(key, field_words::not_finite(field_words::number_text(v)));
  return v;
}

std::uint32_t read_crc(const JsonFields& f, const std::string& key) {
  return static_cast<std::uint32_t>(f.unsigned_integer(key, 0xFFFFFFFFu));
}

Metrics read_metrics(const JsonFields& f) {
  Metrics m;
  m.loss = read_real(f, "loss");
  m.accuracy = read_real(f, "accuracy");
  m.top5_accuracy = read_real(f, "top5_accuracy");
  m.examples = f.integer("examples", 0, std::numeric_limits<std::int64_t>::max());
  return m;
}

constexpr std::int64_t kMaxCount = std::int64_t{1} << 50;

History read_history(const JsonFields& f) {
  History h;
  const JsonList epochs = f.list("epochs");
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    const JsonFields e = epochs.object(i);
    EpochLog log;
    log.epoch = static_cast<int>(e.integer("epoch", 1, 1 << 20));
    if (log.epoch != static_cast<int>(i) + 1) e.fail("epoch", "is out of order");
    log.steps = e.integer("steps", 0, kMaxCount);
    log.steps_per_epoch = e.integer("steps_per_epoch", 0, kMaxCount);
    log.seconds = read_real(e, "seconds");
    log.train = read_metrics(e.object("train"));
    log.has_validation = e.has("validation");
    if (log.has_validation) log.validation = read_metrics(e.object("validation"));
    h.epochs.push_back(log);
  }
  h.steps = f.integer("steps", 0, kMaxCount);
  h.final_train_loss = read_real(f, "final_train_loss");
  h.first_step_loss = read_real(f, "first_step_loss");
  h.train_seconds = read_real(f, "train_seconds");
  h.train_examples = f.integer("train_examples", 0, std::numeric_limits<std::int64_t>::max());
  if (f.has("loss_growth")) {
    const JsonFields g = f.object("loss_growth");
    h.loss_growth = LossGrowth{g.integer("step", 1, kMaxCount), read_real(g, "first_loss"),
                               read_real(g, "loss")};
  }
  return h;
}

LossStats read_stats(const JsonFields& f) {
  LossStats s;
  s.loss_sum = read_real(f, "loss_sum");
  s.correct = f.integer("correct", 0, std::numeric_limits<std::int64_t>::max());
  s.correct_top5 = f.integer("correct_top5", 0, std::numeric_limits<std::int64_t>::max());
  s.count = f.integer("count", 0, std::numeric_limits<std::int64_t>::max());
  return s;
}

// Version 1 wrote the settings by hand: the optimizer as an object, the all-reduce as
// "all_reduce", the shuffling seed apart. Its config as version 2's settings.
json settings_of_version_1(const JsonFields& f) {
  const JsonFields o = f.object("optimizer");
  json settings = settings_json(RunSettings{});  // the devices: version 1 did not keep them
  settings["model"] = f.text("model");
  settings["optimizer"] = o.text("name");
  for (const char* key : {"learning_rate", "momentum", "beta1", "beta2", "epsilon"}) {
    settings[key] = read_finite(o, key);
  }
  settings["loss_scaling"] = f.text("loss_scaling");
  settings["allreduce"] = f.text("all_reduce");
  for (const char* key : {"seed", "epochs", "max_steps", "batch_per_replica", "train_examples"}) {
    settings[key] = f.at(key);
  }
  if (f.unsigned_integer("shuffle_seed") != f.unsigned_integer("seed")) {
    f.fail("shuffle_seed", "differs from \"seed\": this mirrorlab shuffles with the run's seed");
  }
  return settings;
}

CheckpointConfig read_config(const JsonFields& f, std::int64_t version,
                             const std::filesystem::path& state_file) {
  CheckpointConfig c;
  const json settings = version == 1 ? settings_of_version_1(f) : f.at("settings");
  const JsonFields named(settings, f.name(version == 1 ? "" : "settings"), damaged(state_file));
  if (version > 1) {
    for (const std::string& key : unknown_setting_keys(settings)) {
      named.fail(key, "is not a setting this mirrorlab knows");
    }
  }
  try {
    c.settings = read_settings_json(settings, RunSettings{}, true);
  } catch (const SettingError& e) {
    named.fail(e.key(), e.problem());
  }
  if (c.settings.train_examples == 0) named.fail("train_examples", "is 0");
  c.replicas = static_cast<int>(f.integer("replicas", 1, 1 << 16));
  const JsonList devices = f.list("devices");
  for (std::size_t i = 0; i < devices.size(); ++i) c.devices.push_back(devices.text(i));
  c.train_crc32 = read_crc(f, "train_crc32");
  return c;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

}  // namespace

std::uint32_t crc32_of(std::string_view bytes) {
  return static_cast<std::uint32_t>(
      crc32_z(crc32_z(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), bytes.size()));
}

std::uint32_t dataset_crc32(const Dataset& data) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  const std::string dims = std::to_string(data.size()) + "x" + std::to_string(data.rows) + "x" +
                           std::to_string(data.cols);
  crc = crc32_z(crc, reinterpret_cast<const Bytef*>(dims.data()), dims.size());
  crc = crc32_z(crc, data.labels.data(), data.labels.size());
  crc = crc32_z(crc, data.images.data(), data.images.size());
  return static_cast<std::uint32_t>(crc);
}

std::uint32_t order_crc32(const std::vector<std::uint32_t>& order) {
  std::string bytes;
  bytes.reserve(order.size() * 4);
  for (const std::uint32_t i : order) {
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((i >> (8 * b)) & 0xFF));
  }
  return crc32_of(bytes);
}

CheckpointBytes encode_checkpoint(const Checkpoint& c, const std::string& weights_file) {
  // The weights: the model's tensors, then each optimizer slot cut the same way.
  Safetensors weights;
  weights.metadata = {{"format", kCheckpointFormat},
                      {"version", std::to_string(kCheckpointVersion)},
                      {"model", to_string(c.config.settings.model)},
                      {"step", std::to_string(c.position.history.steps)}};
  auto add = [&](const std::string& prefix, const std::vector<float>& flat) {
    for (const WeightTensor& t : c.tensors) {
      SafetensorsTensor tensor;
      tensor.name = prefix + t.name;
      tensor.shape.assign(t.shape.begin(), t.shape.end());
      tensor.values.assign(flat.begin() + static_cast<std::ptrdiff_t>(t.offset),
                           flat.begin() + static_cast<std::ptrdiff_t>(t.offset + t.size));
      weights.tensors.push_back(std::move(tensor));
    }
  };
  add("", c.state.params);
  json slots = json::array();
  for (const ReplicaState::Slot& slot : c.state.slots) {
    add(std::string(kSlotPrefix) + slot.name + "/", slot.values);
    slots.push_back(slot.name);
  }
  CheckpointBytes bytes;
  bytes.weights = write_safetensors(weights);

  json tensors = json::array();
  for (const WeightTensor& t : c.tensors) tensors.push_back({{"name", t.name}, {"shape", t.shape}});
  const CheckpointConfig& k = c.config;
  const FitPosition& p = c.position;
  json state = {{"format", kCheckpointFormat},
                {"version", kCheckpointVersion},
                {"step", p.history.steps},
                {"config",
                 {{"settings", settings_json(k.settings)},
                  {"replicas", k.replicas},
                  {"devices", k.devices},
                  {"train_crc32", k.train_crc32}}},
                {"optimizer_progress",
                 {{"iterations", c.state.progress.iterations},
                  {"momentum_schedule", real(c.state.progress.momentum_schedule)}}},
                {"position",
                 {{"epoch", p.epoch},
                  {"in_epoch", p.in_epoch},
                  {"step_in_epoch", p.step_in_epoch},
                  {"examples_in_epoch", p.examples_in_epoch},
                  {"order_crc32", c.order_crc32},
                  {"running",
                   {{"loss_sum", real(p.running.loss_sum)},
                    {"correct", p.running.correct},
                    {"correct_top5", p.running.correct_top5},
                    {"count", p.running.count}}},
                  {"epoch_seconds", real(p.epoch_seconds)}}},
                {"history", history_json(p.history)},
                {"weights",
                 {{"file", weights_file},
                  {"bytes", bytes.weights.size()},
                  {"crc32", crc32_of(bytes.weights)},
                  {"tensors", tensors},
                  {"slots", slots}}}};
  // The checksum covers the state as nlohmann writes it compactly (keys sorted, numbers in their
  // shortest exact form): reading the file and writing it again gives the same text.
  state["checksum"] = crc32_of(state.dump());
  bytes.state = state.dump(1) + "\n";
  return bytes;
}

namespace {

// The two files a checkpoint is read from, and their paths for the errors.
struct CheckpointFiles {
  std::string_view state_bytes, weights_bytes;
  const std::filesystem::path& state;
  const std::filesystem::path& weights;
  std::string state_name() const { return state.filename().string(); }
};

// The state file's JSON: an object that names the checkpoint format.
json read_state_json(const CheckpointFiles& in) {
  json state;
  try {
    state = parse_shallow_json(in.state_bytes);
  } catch (const std::exception& e) {
    throw CheckpointError(in.state,
                          std::string("is not valid JSON (truncated or damaged?): ") + e.what());
  }
  if (!state.is_object() || !state.contains("format") || state["format"] != kCheckpointFormat) {
    throw CheckpointError(in.state,
                          std::string("is not a mirrorlab checkpoint (no \"format\": \"") +
                              kCheckpointFormat + "\")");
  }
  return state;
}

// The format's version: one this mirrorlab reads.
std::int64_t read_version(const JsonFields& top, const CheckpointFiles& in) {
  const std::int64_t version = top.integer("version", std::numeric_limits<std::int64_t>::min(),
                                           std::numeric_limits<std::int64_t>::max());
  if (version != 1 && version != kCheckpointVersion) {
    throw CheckpointError(
        in.state, "was written in checkpoint format version " + std::to_string(version) +
                      "; this mirrorlab reads versions 1 to " + std::to_string(kCheckpointVersion));
  }
  return version;
}

// The state's "checksum": the CRC-32 of the rest of it, as encode_checkpoint() wrote it.
void check_checksum(const json& state, const JsonFields& top, const CheckpointFiles& in) {
  const std::uint32_t checksum = read_crc(top, "checksum");
  json body = state;
  body.erase("checksum");
  if (const std::uint32_t actual = crc32_of(body.dump()); actual != checksum) {
    throw CheckpointError(in.state, "is damaged: its checksum says " + std::to_string(checksum) +
                                        " but its contents give " + std::to_string(actual));
  }
}

OptimizerProgress read_progress(const JsonFields& f) {
  OptimizerProgress p;
  p.iterations = f.integer("iterations", 0, kMaxCount);
  p.momentum_schedule = read_finite(f, "momentum_schedule");
  return p;
}

// Where the fit stands: its history, the open epoch (with its order's CRC-32), and the state's
// step count, which must be the history's.
void read_position(const JsonFields& top, Checkpoint& c) {
  const JsonFields pos = top.object("position");
  c.position.history = read_history(top.object("history"));
  c.position.epoch = static_cast<int>(pos.integer("epoch", 0, 1 << 20));
  c.position.in_epoch = pos.flag("in_epoch");
  c.position.step_in_epoch = pos.integer("step_in_epoch", 0, kMaxCount);
  c.position.examples_in_epoch =
      static_cast<std::size_t>(pos.integer("examples_in_epoch", 0, kMaxCount));
  c.order_crc32 = read_crc(pos, "order_crc32");
  c.position.running = read_stats(pos.object("running"));
  c.position.epoch_seconds = read_real(pos, "epoch_seconds");
  if (top.integer("step", 0, kMaxCount) != c.position.history.steps) {
    top.fail("step", "differs from the history's step count");
  }
}

// The weights file: the one the state names, whole and unchanged, holding weights of the
// checkpoint's model.
Safetensors read_weights_file(const JsonFields& w, ModelKind model, const CheckpointFiles& in) {
  if (w.text("file") != in.weights.filename().string()) {
    w.fail("file", "names " + w.text("file") + ", not " + in.weights.filename().string());
  }
  const std::uint64_t size = w.unsigned_integer("bytes");
  if (size != in.weights_bytes.size()) {
    throw CheckpointError(in.weights, "holds " + std::to_string(in.weights_bytes.size()) +
                                          " bytes; the checkpoint " + in.state_name() + " says " +
                                          std::to_string(size) +
                                          (in.weights_bytes.size() < size ? " (truncated)" : ""));
  }
  if (const std::uint32_t crc = crc32_of(in.weights_bytes); crc != read_crc(w, "crc32")) {
    throw CheckpointError(in.weights, "is damaged: its CRC-32 is " + std::to_string(crc) +
                                          "; the checkpoint " + in.state_name() + " says " +
                                          std::to_string(read_crc(w, "crc32")));
  }
  Safetensors file;
  try {
    file = parse_safetensors(in.weights_bytes);
  } catch (const SafetensorsError& e) {
    throw CheckpointError(in.weights, e.what());
  }
  const auto saved = file.metadata.find("model");
  if (saved == file.metadata.end() || saved->second.empty()) {
    throw CheckpointError(in.weights,
                          "names no model in its header's __metadata__ (the file is damaged, or "
                          "not mirrorlab's)");
  }
  if (saved->second != to_string(model)) {
    throw CheckpointError(in.weights, "holds a " + saved->second + " model; " + in.state_name() +
                                          " says " + to_string(model));
  }
  return file;
}

// The tensors the state lists, end to end, each no larger than the weights file can hold.
std::vector<WeightTensor> read_tensor_list(const JsonFields& w, const CheckpointFiles& in) {
  const std::size_t most = in.weights_bytes.size() / sizeof(float);
  const JsonList listed = w.list("tensors");
  std::vector<WeightTensor> tensors;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const JsonFields t = listed.object(i);
    WeightTensor tensor;
    tensor.name = t.text("name");
    std::size_t size = 1;
    const JsonList shape = t.list("shape");
    for (std::size_t j = 0; j < shape.size(); ++j) {
      const json& d = shape.at(j);
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > most || tensor.shape.size() >= 8) {
        t.fail("shape", "is not the shape of a tensor in these weights");
      }
      tensor.shape.push_back(d.get<int>());
      size = tensor.shape.back() == 0 ? 0 : std::min(size * tensor.shape.back(), most + 1);
    }
    if (size > most - offset) t.fail("shape", "needs more values than the weights file holds");
    tensor.offset = offset;
    tensor.size = size;
    offset += size;
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

// The optimizer's slots the weights hold, by name, each once.
std::vector<ReplicaState::Slot> read_slot_names(const JsonFields& w) {
  const JsonList names = w.list("slots");
  std::vector<ReplicaState::Slot> slots;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string name = names.text(i);
    if (!seen.insert(name).second) names.fail(i, "names '" + name + "' again");
    slots.push_back({name, {}});
  }
  return slots;
}

// The model's weights and each slot's values from the weights file: every tensor the state
// lists, with its shape, and nothing else.
void take_weights(const Safetensors& file, Checkpoint& c, const CheckpointFiles& in) {
  std::map<std::string, const SafetensorsTensor*> by_name;
  for (const SafetensorsTensor& t : file.tensors) by_name[t.name] = &t;
  const std::size_t values =
      c.tensors.empty() ? 0 : c.tensors.back().offset + c.tensors.back().size;
  std::size_t expected_tensors = 0;
  auto take = [&](const std::string& prefix, std::vector<float>& flat) {
    flat.reserve(values);
    for (const WeightTensor& t : c.tensors) {
      const std::string name = prefix + t.name;
      const auto it = by_name.find(name);
      if (it == by_name.end()) {
        throw CheckpointError(
            in.weights, "has no tensor \"" + name + "\", which " + in.state_name() + " lists");
      }
      const std::vector<std::int64_t> shape(t.shape.begin(), t.shape.end());
      if (it->second->shape != shape) {
        throw CheckpointError(in.weights, "tensor \"" + name + "\" has shape " +
                                              shape_text(it->second->shape) + "; " +
                                              in.state_name() + " says " + shape_text(shape));
      }
      flat.insert(flat.end(), it->second->values.begin(), it->second->values.end());
      ++expected_tensors;
    }
  };
  take("", c.state.params);
  for (ReplicaState::Slot& slot : c.state.slots) take(kSlotPrefix + slot.name + "/", slot.values);
  if (expected_tensors != file.tensors.size()) {
    throw CheckpointError(in.weights, "holds " + std::to_string(file.tensors.size()) +
                                          " tensors; " + in.state_name() + " lists " +
                                          std::to_string(expected_tensors));
  }
}

}  // namespace

Checkpoint decode_checkpoint(std::string_view state_bytes, std::string_view weights_bytes,
                             const std::filesystem::path& state_file,
                             const std::filesystem::path& weights_file) {
  const CheckpointFiles in{state_bytes, weights_bytes, state_file, weights_file};
  const json state = read_state_json(in);
  const JsonFields top(state, "", damaged(state_file));
  const std::int64_t version = read_version(top, in);
  check_checksum(state, top, in);
  Checkpoint c;
  c.config = read_config(top.object("config"), version, state_file);
  c.state.progress = read_progress(top.object("optimizer_progress"));
  read_position(top, c);
  const JsonFields weights = top.object("weights");
  const Safetensors file = read_weights_file(weights, c.config.settings.model, in);
  c.tensors = read_tensor_list(weights, in);
  c.state.slots = read_slot_names(weights);
  take_weights(file, c, in);
  return c;
}

}  // namespace mirrorlab::core
