// `mirrorlab train`: mirrored training of a real model on Fashion-MNIST, on N virtual GPUs:
// CPU-backed, or CUDA physical or logical GPUs (--backend).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "app/device_flags.h"
#include "app/flags.h"
#include "app/output_files.h"
#include "core/io/dataset.h"
#include "core/strategy/faults.h"
#include "core/strategy/fit.h"
#include "core/strategy/mirrored_strategy.h"

namespace mirrorlab::app {

struct TrainOptions {
  std::string model = "cnn";
  DeviceFlags devices;
  std::int64_t batch_per_replica = 64;
  int epochs = 5;
  std::int64_t max_steps = 0;
  std::string optimizer = "adam";
  double learning_rate = 1e-3;
  std::string allreduce = "auto";
  std::string loss_scaling = "replica-mean";
  std::uint64_t seed = 42;
  std::string data_dir = core::kDefaultFashionMnistDir;
  std::int64_t train_examples = 0;        // 0: all 60,000
  core::FaultPlan faults;                 // --slow-device, --fail-device, --nan-at
  std::string history_file;
  std::string trace_file;
  // Checkpoints (train only; app/train_checkpoints.h).
  std::string checkpoint_dir;
  StepsOrEpochs checkpoint_every;  // count 0: every epoch
  int keep = 0;                    // 0: every checkpoint
  std::string resume_dir;
  // The flags given on the command line ("--lr"), filled once `train` is parsed: a resumed run
  // refuses those that would change what the checkpoint fixed.
  std::set<std::string> given;
  int workers = 0;                     // --workers: 0 = as many as mpirun started
  double worker_timeout_seconds = 60;  // --worker-timeout
};

// `train` with the flags below and its output files (--history, --trace).
CLI::App* add_train_command(CLI::App& app, TrainOptions& options);
// The flags of every command that trains (devices, model, optimizer, batch, ...).
void add_training_flags(CLI::App* command, TrainOptions& options);
// Those of them `compare` shares (its training step), with the same names, help and checks; the
// defaults are the variables' (TrainOptions' for both commands).
void add_model_flag(CLI::App* command, std::string& model);
void add_batch_per_replica_flag(CLI::App* command, std::int64_t& batch_per_replica);
void add_optimizer_flag(CLI::App* command, std::string& optimizer);
void add_allreduce_flag(CLI::App* command, std::string& allreduce);
// "" when the flags fit together (and *gpus is the device count), else what to change. With
// `outputs`, also creates --history and --trace (refusing what cannot be written).
std::string check_train_options(const TrainOptions& options, int* gpus,
                                OutputFiles* outputs = nullptr);
core::StrategyOptions strategy_options(const TrainOptions& options);
core::FitOptions fit_options(const TrainOptions& options);
// Loads Fashion-MNIST (cut to --train-examples), saying so on stdout.
core::FashionMnist load_training_data(const TrainOptions& options);
// Runs the command; returns the process exit status (0 ok, 1 run failed, 2 bad input).
int run_train(const TrainOptions& options);

}  // namespace mirrorlab::app
