#include "core/checkpoint/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/checkpoint/safetensors.h"
#include "core/checkpoint/shallow_json.h"
#include "nlohmann/json.hpp"

namespace mirrorlab::core {
namespace {

using json = nlohmann::json;

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

// A JSON object read field by field; every error names the field ("position.epoch") and the file.
class Fields {
 public:
  Fields(const json& object, std::string path, const std::filesystem::path* file)
      : object_(&object), path_(std::move(path)), file_(file) {
    if (!object.is_object()) fail("", "is not a JSON object");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    const std::string name = key.empty() ? path_ : path_.empty() ? key : path_ + "." + key;
    throw CheckpointError(*file_, (name.empty() ? "the state" : "\"" + name + "\"") + " " +
                                      problem + " (the file is damaged, or not mirrorlab's)");
  }
  const json& at(const std::string& key) const {
    const auto it = object_->find(key);
    if (it == object_->end()) fail(key, "is missing");
    return *it;
  }
  bool has_value(const std::string& key) const {
    const auto it = object_->find(key);
    return it != object_->end() && !it->is_null();
  }
  std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max) const {
    const json& v = at(key);
    if (!v.is_number_integer()) fail(key, "is not a whole number");
    if (v.is_number_unsigned() &&
        v.get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail(key, "is " + v.dump() + ", too large");
    }
    const std::int64_t value = v.get<std::int64_t>();
    if (value < min || value > max) {
      fail(key, "is " + std::to_string(value) + ", outside [" + std::to_string(min) + ", " +
                    std::to_string(max) + "]");
    }
    return value;
  }
  std::uint64_t unsigned_integer(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number_unsigned()) fail(key, "is not a whole number >= 0");
    return v.get<std::uint64_t>();
  }
  std::uint32_t crc(const std::string& key) const {
    const std::uint64_t v = unsigned_integer(key);
    if (v > 0xFFFFFFFFu) fail(key, "is not a CRC-32");
    return static_cast<std::uint32_t>(v);
  }
  double real(const std::string& key) const {
    const json& v = at(key);
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    fail(key, "is not a number");
  }
  double finite(const std::string& key) const {
    const double v = real(key);
    if (!std::isfinite(v)) fail(key, "is not a finite number");
    return v;
  }
  std::string text(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(key, "is not text");
    return v.get<std::string>();
  }
  bool flag(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_boolean()) fail(key, "is not true or false");
    return v.get<bool>();
  }
  Fields object(const std::string& key) const {
    return Fields(at(key), path_.empty() ? key : path_ + "." + key, file_);
  }
  const json& array(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_array()) fail(key, "is not a list");
    return v;
  }
  std::string child(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  const std::string& path() const { return path_; }
  const std::filesystem::path* file() const { return file_; }

 private:
  const json* object_;
  std::string path_;
  const std::filesystem::path* file_;
};

Metrics read_metrics(const Fields& f) {
  Metrics m;
  m.loss = f.real("loss");
  m.accuracy = f.real("accuracy");
  m.top5_accuracy = f.real("top5_accuracy");
  m.examples = f.integer("examples", 0, std::numeric_limits<std::int64_t>::max());
  return m;
}

constexpr std::int64_t kMaxCount = std::int64_t{1} << 50;

History read_history(const Fields& f) {
  History h;
  const json& epochs = f.array("epochs");
  for (std::size_t i = 0; i < epochs.size(); ++i) {
    const Fields e(epochs[i], f.child("epochs") + "[" + std::to_string(i) + "]", f.file());
    EpochLog log;
    log.epoch = static_cast<int>(e.integer("epoch", 1, 1 << 20));
    if (log.epoch != static_cast<int>(i) + 1) e.fail("epoch", "is out of order");
    log.steps = e.integer("steps", 0, kMaxCount);
    log.steps_per_epoch = e.integer("steps_per_epoch", 0, kMaxCount);
    log.seconds = e.real("seconds");
    log.train = read_metrics(e.object("train"));
    log.has_validation = e.has_value("validation");
    if (log.has_validation) log.validation = read_metrics(e.object("validation"));
    h.epochs.push_back(log);
  }
  h.steps = f.integer("steps", 0, kMaxCount);
  h.final_train_loss = f.real("final_train_loss");
  h.first_step_loss = f.real("first_step_loss");
  h.train_seconds = f.real("train_seconds");
  h.train_examples = f.integer("train_examples", 0, std::numeric_limits<std::int64_t>::max());
  if (f.has_value("loss_growth")) {
    const Fields g = f.object("loss_growth");
    h.loss_growth =
        LossGrowth{g.integer("step", 1, kMaxCount), g.real("first_loss"), g.real("loss")};
  }
  return h;
}

LossStats read_stats(const Fields& f) {
  LossStats s;
  s.loss_sum = f.real("loss_sum");
  s.correct = f.integer("correct", 0, std::numeric_limits<std::int64_t>::max());
  s.correct_top5 = f.integer("correct_top5", 0, std::numeric_limits<std::int64_t>::max());
  s.count = f.integer("count", 0, std::numeric_limits<std::int64_t>::max());
  return s;
}

// Version 1 wrote the settings by hand: the optimizer as an object, the all-reduce as
// "all_reduce", the shuffling seed apart. Its config as version 2's settings.
json settings_of_version_1(const Fields& f) {
  const Fields o = f.object("optimizer");
  json settings = settings_json(RunSettings{});  // the devices: version 1 did not keep them
  settings["model"] = f.text("model");
  settings["optimizer"] = o.text("name");
  for (const char* key : {"learning_rate", "momentum", "beta1", "beta2", "epsilon"}) {
    settings[key] = o.finite(key);
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

CheckpointConfig read_config(const Fields& f, std::int64_t version) {
  CheckpointConfig c;
  const json settings = version == 1 ? settings_of_version_1(f) : f.at("settings");
  const Fields named(settings, version == 1 ? f.path() : f.child("settings"), f.file());
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
  for (const json& d : f.array("devices")) {
    if (!d.is_string()) f.fail("devices", "holds something that is not a device name");
    c.devices.push_back(d.get<std::string>());
  }
  c.train_crc32 = f.crc("train_crc32");
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

Checkpoint decode_checkpoint(std::string_view state_bytes, std::string_view weights_bytes,
                             const std::filesystem::path& state_file,
                             const std::filesystem::path& weights_file) {
  json state;
  try {
    state = parse_shallow_json(state_bytes);
  } catch (const std::exception& e) {
    throw CheckpointError(state_file,
                          std::string("is not valid JSON (truncated or damaged?): ") + e.what());
  }
  if (!state.is_object() || !state.contains("format") || state["format"] != kCheckpointFormat) {
    throw CheckpointError(state_file,
                          std::string("is not a mirrorlab checkpoint (no \"format\": \"") +
                              kCheckpointFormat + "\")");
  }
  const Fields top(state, "", &state_file);
  const std::int64_t version = top.integer("version", std::numeric_limits<std::int64_t>::min(),
                                           std::numeric_limits<std::int64_t>::max());
  if (version != 1 && version != kCheckpointVersion) {
    throw CheckpointError(state_file, "was written in checkpoint format version " +
                                          std::to_string(version) +
                                          "; this mirrorlab reads versions 1 to " +
                                          std::to_string(kCheckpointVersion));
  }
  const std::uint32_t checksum = top.crc("checksum");
  json body = state;
  body.erase("checksum");
  if (const std::uint32_t actual = crc32_of(body.dump()); actual != checksum) {
    throw CheckpointError(state_file, "is damaged: its checksum says " + std::to_string(checksum) +
                                          " but its contents give " + std::to_string(actual));
  }

  Checkpoint c;
  c.config = read_config(top.object("config"), version);
  const Fields progress = top.object("optimizer_progress");
  c.state.progress.iterations = progress.integer("iterations", 0, kMaxCount);
  c.state.progress.momentum_schedule = progress.finite("momentum_schedule");
  const Fields pos = top.object("position");
  c.position.history = read_history(top.object("history"));
  c.position.epoch = static_cast<int>(pos.integer("epoch", 0, 1 << 20));
  c.position.in_epoch = pos.flag("in_epoch");
  c.position.step_in_epoch = pos.integer("step_in_epoch", 0, kMaxCount);
  c.position.examples_in_epoch =
      static_cast<std::size_t>(pos.integer("examples_in_epoch", 0, kMaxCount));
  c.order_crc32 = pos.crc("order_crc32");
  c.position.running = read_stats(pos.object("running"));
  c.position.epoch_seconds = pos.real("epoch_seconds");
  if (top.integer("step", 0, kMaxCount) != c.position.history.steps) {
    top.fail("step", "differs from the history's step count");
  }

  // The weights file: the one the state names, whole and unchanged, holding the tensors listed.
  const Fields w = top.object("weights");
  if (w.text("file") != weights_file.filename().string()) {
    w.fail("file", "names " + w.text("file") + ", not " + weights_file.filename().string());
  }
  const std::uint64_t size = w.unsigned_integer("bytes");
  if (size != weights_bytes.size()) {
    throw CheckpointError(
        weights_file, "holds " + std::to_string(weights_bytes.size()) + " bytes; the checkpoint " +
                          state_file.filename().string() + " says " + std::to_string(size) +
                          (weights_bytes.size() < size ? " (truncated)" : ""));
  }
  if (const std::uint32_t crc = crc32_of(weights_bytes); crc != w.crc("crc32")) {
    throw CheckpointError(weights_file, "is damaged: its CRC-32 is " + std::to_string(crc) +
                                            "; the checkpoint " + state_file.filename().string() +
                                            " says " + std::to_string(w.crc("crc32")));
  }
  Safetensors file;
  try {
    file = parse_safetensors(weights_bytes);
  } catch (const SafetensorsError& e) {
    throw CheckpointError(weights_file, e.what());
  }
  std::map<std::string, const SafetensorsTensor*> by_name;
  for (const SafetensorsTensor& t : file.tensors) by_name[t.name] = &t;
  if (file.metadata["model"] != to_string(c.config.settings.model)) {
    throw CheckpointError(weights_file, "holds a " + file.metadata["model"] + " model; " +
                                            state_file.filename().string() + " says " +
                                            to_string(c.config.settings.model));
  }
  // The tensors the state lists, each no larger than the weights file can hold.
  const std::size_t most = weights_bytes.size() / sizeof(float);
  const json& listed = w.array("tensors");
  std::size_t offset = 0;
  for (std::size_t i = 0; i < listed.size(); ++i) {
    const Fields t(listed[i], w.child("tensors") + "[" + std::to_string(i) + "]", &state_file);
    WeightTensor tensor;
    tensor.name = t.text("name");
    std::size_t size = 1;
    for (const json& d : t.array("shape")) {
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
    c.tensors.push_back(std::move(tensor));
  }
  std::set<std::string> slot_names;
  for (const json& s : w.array("slots")) {
    if (!s.is_string() || !slot_names.insert(s.get<std::string>()).second) {
      w.fail("slots", "holds a slot name that is not text, or one twice");
    }
    c.state.slots.push_back({s.get<std::string>(), {}});
  }
  // Every tensor the state lists, with its shape, and nothing else.
  std::size_t expected_tensors = 0;
  auto take = [&](const std::string& prefix, std::vector<float>& flat) {
    flat.reserve(offset);
    for (const WeightTensor& t : c.tensors) {
      const std::string name = prefix + t.name;
      const auto it = by_name.find(name);
      if (it == by_name.end()) {
        throw CheckpointError(weights_file, "has no tensor \"" + name + "\", which " +
                                                state_file.filename().string() + " lists");
      }
      const std::vector<std::int64_t> shape(t.shape.begin(), t.shape.end());
      if (it->second->shape != shape) {
        throw CheckpointError(
            weights_file, "tensor \"" + name + "\" has shape " + shape_text(it->second->shape) +
                              "; " + state_file.filename().string() + " says " + shape_text(shape));
      }
      flat.insert(flat.end(), it->second->values.begin(), it->second->values.end());
      ++expected_tensors;
    }
  };
  take("", c.state.params);
  for (ReplicaState::Slot& slot : c.state.slots) take(kSlotPrefix + slot.name + "/", slot.values);
  if (expected_tensors != file.tensors.size()) {
    throw CheckpointError(weights_file, "holds " + std::to_string(file.tensors.size()) +
                                            " tensors; " + state_file.filename().string() +
                                            " lists " + std::to_string(expected_tensors));
  }
  return c;
}

}  // namespace mirrorlab::core
