// The flags of every command that trains (`train`, `gui`) and of `compare`'s training step, each
// filling the run's settings (core/settings/run_settings.h), beside device_flags and fault_flags.
// A setting's flag is named after its key ("batch_per_replica": --batch-per-replica), but for
// the few flag_for_setting() names otherwise (--lr).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "app/flags/cli_declarations.h"
#include "app/flags/device_flags.h"
#include "app/flags/flags.h"
#include "app/output/output_files.h"
#include "core/io/dataset.h"
#include "core/settings/run_settings.h"
#include "core/strategy/faults.h"

namespace mirrorlab::app {

// `train`'s settings before any flag: the core's defaults, and as many workers as mpirun started.
core::RunSettings train_settings_defaults();

struct TrainOptions {
  core::RunSettings settings = train_settings_defaults();
  std::string data_dir = core::kDefaultFashionMnistDir;
  core::FaultPlan faults;  // --slow-device, --fail-device, --nan-at
  std::string history_file;
  std::string trace_file;
  // Checkpoints (train only; app/train/train_checkpoints.h).
  std::string checkpoint_dir;
  StepsOrEpochs checkpoint_every;  // count 0: every epoch
  int keep = 0;                    // 0: every checkpoint
  std::string resume_dir;
  // The flags given on the command line ("--lr"), filled once `train` or `gui` is parsed: a
  // resumed run refuses those that would change what the checkpoint fixed, and workers that
  // differ are told which flag one of them did not give.
  std::set<std::string> given;
  double worker_timeout_seconds = 60;  // --worker-timeout
};

// The flag that sets the setting `key` ("--lr" for "learning_rate"), or "" for one no flag sets
// (beta1, beta2, epsilon: Keras' defaults).
std::string flag_for_setting(const std::string& key);

// The flags of every command that trains (devices, model, optimizer, batch, ...).
void add_training_flags(CLI::App* command, TrainOptions& options);
// Those of them `compare` shares (its training step), with the same names, help and checks; the
// defaults are the settings' own.
void add_model_flag(CLI::App* command, core::RunSettings& settings);
void add_batch_per_replica_flag(CLI::App* command, core::RunSettings& settings);
void add_optimizer_flags(CLI::App* command, core::RunSettings& settings);  // and --lr, --momentum
void add_allreduce_flag(CLI::App* command, core::RunSettings& settings);
// --bytes-per-pack and --num-packs: the gradients all-reduced in packs
// (core/strategy/gradient_packs.h).
void add_pack_flags(CLI::App* command, core::RunSettings& settings);

// "" when the flags fit together (and *gpus is the device count), else what to change. With
// `outputs`, also creates --history and --trace (refusing what cannot be written).
std::string check_train_options(const TrainOptions& options, int* gpus,
                                OutputFiles* outputs = nullptr);
// Loads Fashion-MNIST (cut to --train-examples), saying so on stdout.
// *problem: --train-examples beyond the training set (then the data is not to be used).
core::FashionMnist load_training_data(const TrainOptions& options, std::string* problem);

}  // namespace mirrorlab::app
