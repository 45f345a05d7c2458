// `mpirun -np W mirrorlab train --gpus N ...`: each MPI rank a worker with N devices, as
// TensorFlow's MultiWorkerMirroredStrategy runs one worker per TF_CONFIG task. This file is the
// command line's side: whether this process is one of several (and what is missing when it
// cannot be), the worker group over MPI, each worker's TF_CONFIG, the flags compared between
// workers, and the history and trace of every worker merged into one file by worker 0.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/flags/cli_declarations.h"
#include "core/io/dataset.h"
#include "core/strategy/events/run_events.h"
#include "nlohmann/json.hpp"
#include "virtualgpu/workers/worker_group.h"

namespace mirrorlab::app {

struct TrainOptions;

// --workers and --worker-timeout, train's.
void add_worker_flags(CLI::App* command, TrainOptions& options);

// Whether MPI is built into this mirrorlab (virtualgpu/mpi/).
bool mpi_built();

// "" when this process may train as the launch says: alone (no launcher, or mpirun -np 1), or
// as one of W workers (mpirun -np W, MPI built, --workers 0 or W). Else what to do: install MPI
// and rebuild, launch with mpirun, or make --workers and -np agree. `workers_flag`: --workers
// (0: whatever mpirun gives).
std::string check_launch(int workers_flag, const vgpu::Launch& launch, bool mpi_built);

// The worker group of this process (MPI), when the launch is several workers; nullptr when it
// trains alone. `timeout_seconds`: the longest a collective may wait for a worker on another
// host. A worker lost (worker_watch.h) ends this process at once: its sentence on stderr, exit 1.
// Call finish_workers() at the end of a run that went well.
std::unique_ptr<vgpu::WorkerGroup> start_workers(const vgpu::Launch& launch,
                                                 double timeout_seconds);
// On CUDA devices (the first of `devices`), with NCCL built: a group whose step across workers is
// NCCL across processes (virtualgpu/mpi/nccl_workers.h), over `workers`. nullptr when the devices
// are CPU virtual GPUs, or NCCL cannot serve them, with the reason in *why_not (MPI through host
// memory serves them then).
std::unique_ptr<vgpu::WorkerGroup> nccl_workers(vgpu::WorkerGroup& workers,
                                                const std::vector<vgpu::Device*>& devices,
                                                std::string* why_not);
// The last barrier, then MPI_Finalize: only once every worker is past its last collective.
void finish_workers(vgpu::WorkerGroup& workers);

// The flags that must be the same on every worker, "--name value", one per line (all but --data,
// a folder that may differ between hosts: the data itself is compared once loaded). A flag not
// given (options.given) is followed by a tab and the words that say so, with what the worker
// trains with instead: "--gpus 0\tgave no --gpus (the default, 2)".
std::string train_flag_lines(const TrainOptions& options);
// "" when every worker's lines equal worker 0's (the words after a tab aside); else the first
// difference, naming the worker and the flag with both values ("worker 1 has --gpus 1 where
// worker 0 gave no --gpus (the default, 2)").
std::string compare_worker_flags(const std::vector<std::string>& lines_by_worker);

// "60000 training and 10000 test images (labels 3f2a...)": what must be equal on every worker.
std::string describe_data(const core::FashionMnist& data);

// What is not built for several workers yet (checkpoints, resuming, faults), as a refusal; "".
std::string not_for_workers(const TrainOptions& options);
// The start of a run with several workers, on every worker (an exchange): each worker's own
// refusal (`own_problem`, "" for none) and its flags (train_flag_lines). "" when every worker may
// train; else the first refusal (naming its worker) or the first flag that differs.
std::string agree_to_train(vgpu::WorkerGroup& workers, const std::string& own_problem,
                           const std::string& flag_lines);
// Prints this worker's line with its TF_CONFIG; on the other workers than 0, what the run prints
// next on stdout goes to /dev/null (worker 0 tells the run). False when that fails.
bool announce_worker(vgpu::WorkerGroup& workers);
// "" when every worker loaded the same data (sizes and training labels), else the sentence.
std::string check_same_data(vgpu::WorkerGroup& workers, const core::FashionMnist& data);
// Every worker's devices (phase seconds, peak memory) and trace to every worker (an exchange):
// *history_workers becomes the history's "workers", *trace a process per worker.
void gather_workers(vgpu::WorkerGroup& workers, const std::vector<vgpu::Device*>& devices,
                    const std::vector<core::PhaseTotals>& totals, nlohmann::json* history_workers,
                    std::vector<core::TraceProcess>* trace);

// A worker's part of the merged files, as text to gather to worker 0.
std::string worker_part(const vgpu::WorkerGroup& workers, const nlohmann::json& devices,
                        const std::vector<core::TraceEvent>& events);
// Worker 0: every worker's part as "workers" entries of the history, and as one Chrome trace
// with a process per worker and a lane per device.
struct MergedRun {
  nlohmann::json workers = nlohmann::json::array();
  std::vector<core::TraceProcess> trace;
};
MergedRun merge_worker_parts(const std::vector<std::string>& parts);

}  // namespace mirrorlab::app
