// A run's settings, as one typed value: the model, the optimizer with its hyper-parameters, the
// loss scaling, the all-reduce, the batch, the schedule, the seed, the data and the devices.
//
// Every face reads and writes this one value: the command line's flags (app/flags/train_flags.cpp),
// the lessons' [setup] blocks, the GUI's controls, checkpoints, the followers of a window run
// under mpirun, the history's "config", and the check that every worker was started alike.
// Each setting is listed once, in for_each_setting() below, with its key in files and the range
// its value must be in; the JSON writer and reader, the text of a value and the differences
// between two settings all walk that list, so a setting added there reaches all of them.
// (tests/core/test_run_settings.cpp fails when a member of RunSettings is missing from the list.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/nn/model.h"
#include "core/nn/optimizer.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"
#include "nlohmann/json_fwd.hpp"
#include "virtualgpu/devices/device_registry.h"

namespace mirrorlab::core {

// Where the devices are and how many: what tf.config.set_logical_device_configuration is given.
struct DeviceSettings {
  std::string backend = "cpu";  // cpu (CPU-backed virtual GPUs), cuda, or auto (CUDA if visible)
  int gpus = 0;  // 0: as many as memory_limits_mib or physical_gpus list, else the face's default
  std::vector<std::int64_t> memory_limits_mib;  // one, or one per device; empty: 1024 each
  std::vector<int> physical_gpus;               // which cards (CUDA); empty: the first
  bool sm_split = false;                        // each logical GPU its own SMs (CUDA)
  bool cuda_graphs = true;  // a step's forward and backward as one CUDA graph (StrategyOptions)
  bool operator==(const DeviceSettings&) const = default;
};

struct RunSettings {
  ModelKind model = ModelKind::kCnn;
  OptimizerConfig optimizer;  // kind, learning rate, momentum (SGD), beta1, beta2, epsilon
  LossScaling loss_scaling = LossScaling::kReplicaMean;
  std::string allreduce{vgpu::kAutoAllReduce};  // "auto" or a name of the algorithms' table
  PackOptions packs;  // the gradients all-reduced in packs (0 and 0: one pack)
  std::size_t batch_per_replica = 64;
  int epochs = 5;
  std::int64_t max_steps = 0;      // 0: no limit
  std::uint64_t seed = 42;         // the initial weights and the shuffling
  std::size_t train_examples = 0;  // the first N of the training set (0: all of it)
  DeviceSettings devices;
  int workers = 1;  // workers of `devices` each (0: as many as the launcher started)
  bool operator==(const RunSettings&) const = default;
};

// What a setting is to a run that goes on from a checkpoint.
enum class SettingRole {
  kFixed,       // the checkpoint fixed it: a resumed run keeps it (model, optimizer, seed, data)
  kChangeable,  // a resumed run may change it, and keeps the checkpoint's unless told (batch,
                //   schedule, all-reduce)
  kDevices,     // how many devices and workers, and their memory: a resumed run's own, whatever
                //   the checkpoint had (it goes on as many replicas as the checkpoint's unless
                //   told otherwise: app/train/train_checkpoints.cpp)
  kMachine,  // where the devices are: this machine's choice, never a file's (lessons, checkpoints)
};

struct SettingInfo {
  const char* key;  // in JSON, checkpoints and lesson files: "learning_rate"
  SettingRole role;
  double min = 0, max = 0;  // numbers and each entry of a list: the range (both included)
  const std::vector<std::string>* choices = nullptr;  // texts: the names it may take
};

// The names `allreduce` and `backend` may take.
const std::vector<std::string>& allreduce_choices();  // auto, then the algorithms' table
const std::vector<std::string>& backend_choices();    // cpu, cuda, auto

// Calls visit(info, member) for each setting of `settings` (RunSettings, const or not), in the
// order files write them. A member's type is one of: an enum with a table of names
// (core/io/choice_names.h), std::string, bool, float, int, std::int64_t, std::size_t,
// std::uint64_t, std::vector<std::int64_t>, std::vector<int>.
template <class Settings, class Visit>
void for_each_setting(Settings& s, Visit&& visit) {
  using R = SettingRole;
  constexpr double kCount = static_cast<double>(std::int64_t{1} << 40);
  visit(SettingInfo{"model", R::kFixed}, s.model);
  visit(SettingInfo{"optimizer", R::kFixed}, s.optimizer.kind);
  visit(SettingInfo{"learning_rate", R::kFixed, 1e-9, 10}, s.optimizer.learning_rate);
  visit(SettingInfo{"momentum", R::kFixed, 0, 1}, s.optimizer.momentum);
  visit(SettingInfo{"beta1", R::kFixed, 0, 1}, s.optimizer.beta1);
  visit(SettingInfo{"beta2", R::kFixed, 0, 1}, s.optimizer.beta2);
  visit(SettingInfo{"epsilon", R::kFixed, 1e-12, 1}, s.optimizer.epsilon);
  visit(SettingInfo{"loss_scaling", R::kFixed}, s.loss_scaling);
  visit(SettingInfo{"allreduce", R::kChangeable, 0, 0, &allreduce_choices()}, s.allreduce);
  visit(SettingInfo{"bytes_per_pack", R::kChangeable, 0, kCount}, s.packs.bytes_per_pack);
  visit(SettingInfo{"num_packs", R::kChangeable, 0, 1 << 20}, s.packs.num_packs);
  visit(SettingInfo{"overlap", R::kChangeable}, s.packs.overlap);
  visit(SettingInfo{"batch_per_replica", R::kChangeable, 1, 1 << 16}, s.batch_per_replica);
  visit(SettingInfo{"epochs", R::kChangeable, 1, 1000}, s.epochs);
  visit(SettingInfo{"max_steps", R::kChangeable, 0, kCount}, s.max_steps);
  visit(SettingInfo{"seed", R::kFixed, 0, std::numeric_limits<double>::infinity()}, s.seed);
  visit(SettingInfo{"train_examples", R::kFixed, 0, static_cast<double>(std::int64_t{1} << 31)},
        s.train_examples);
  visit(SettingInfo{"backend", R::kMachine, 0, 0, &backend_choices()}, s.devices.backend);
  visit(SettingInfo{"gpus", R::kDevices, 0, 64}, s.devices.gpus);
  visit(SettingInfo{"memory_mib", R::kDevices, 1, static_cast<double>(1 << 20)},
        s.devices.memory_limits_mib);
  visit(SettingInfo{"physical_gpus", R::kMachine, 0, 63}, s.devices.physical_gpus);
  visit(SettingInfo{"sm_split", R::kMachine}, s.devices.sm_split);
  visit(SettingInfo{"cuda_graphs", R::kMachine}, s.devices.cuda_graphs);
  visit(SettingInfo{"workers", R::kDevices, 0, 4096}, s.workers);
}

// Each setting of `from` that pick(info) chooses, copied into `to` (the rest of `to` stays).
template <class Pick>
void copy_settings(const RunSettings& from, RunSettings& to, Pick&& pick) {
  std::vector<const void*> values;  // for_each_setting walks both in the same order
  for_each_setting(from, [&](const SettingInfo&, const auto& v) { values.push_back(&v); });
  std::size_t i = 0;
  for_each_setting(to, [&](const SettingInfo& info, auto& v) {
    if (pick(info)) v = *static_cast<const std::remove_reference_t<decltype(v)>*>(values[i]);
    ++i;
  });
}

// Every setting's key, in order.
std::vector<std::string> setting_keys();

// A setting that cannot be read: which one, and why, in a sentence that names the key
// ("`learning_rate`: is 20, out of range: give a number from 1e-09 to 10").
class SettingError : public std::invalid_argument {
 public:
  SettingError(std::string key, std::string problem);  // what(): "`key`: problem"
  const std::string& key() const { return key_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string key_, problem_;
};

// One JSON object of every setting, keyed as for_each_setting says.
nlohmann::json settings_json(const RunSettings& settings);
// `base` with each setting `object` gives (keys that name no setting are left to the caller:
// unknown_setting_keys). Every value is checked for its type, range and names; with
// `every_key`, a setting missing is an error too (a file mirrorlab wrote has them all). Throws
// SettingError.
RunSettings read_settings_json(const nlohmann::json& object, RunSettings base,
                               bool every_key = false);
// The keys of `object` that name no setting and are not in `also_allowed`.
std::vector<std::string> unknown_setting_keys(const nlohmann::json& object,
                                              const std::vector<std::string>& also_allowed = {});

// A setting's value as text ("0.001", "cnn", "1024,512", "(none)", "on").
struct SettingDifference {
  std::string key;
  SettingRole role;
  std::string first, second;  // each side's value as text
};
// The settings whose values differ, in for_each_setting's order.
std::vector<SettingDifference> setting_differences(const RunSettings& first,
                                                   const RunSettings& second);
// Each setting as "key value", one a line; `label`, when given, names each setting instead of
// its key (the app: by its flag).
std::string settings_lines(const RunSettings& settings,
                           const std::function<std::string(const std::string&)>& label = {});

// The logical devices `devices` asks for, one configuration each: `gpus` of them (0: one per
// memory limit when several are given, else `default_count`), each capped at its limit (one
// limit: every device's; none: 1024 MiB). Their kind (backend, cards) is the caller's to make.
std::vector<vgpu::LogicalDeviceConfiguration> logical_devices(const DeviceSettings& devices,
                                                              int default_count = 2);

// What the core is built from.
StrategyOptions strategy_options(const RunSettings& settings);
FitOptions fit_options(const RunSettings& settings);

}  // namespace mirrorlab::core
