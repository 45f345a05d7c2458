// `mirrorlab train`: mirrored training of a real model on Fashion-MNIST, on N virtual GPUs:
// CPU-backed, or CUDA physical or logical GPUs (--backend).
#pragma once

#include "app/flags/cli_declarations.h"
#include "app/flags/train_flags.h"

namespace mirrorlab::app {

// `train` with the training flags (app/flags/train_flags.h) and its output files (--history,
// --trace), checkpoints and workers.
CLI::App* add_train_command(CLI::App& app, TrainOptions& options);
// Runs the command; returns the process exit status (0 ok, 1 run failed, 2 bad input).
int run_train(const TrainOptions& options);

}  // namespace mirrorlab::app
