// The workers of one training job as MPI ranks (built when CMake finds MPI: Debian's Open MPI).
//
// Each rank of MPI_COMM_WORLD is a worker. The group works on its own duplicate of the world
// communicator, with MPI_ERRORS_RETURN, so that a failed call is a sentence (the call and MPI's
// words) rather than MPI's default abort. Across workers it uses MPI's own collectives
// (MPI_Allreduce, MPI_Bcast, MPI_Allgatherv), blocking: MPI picks its algorithm by size and rank
// count, and the benchmark (docs/multi-worker.md) compares the all-reduce with MPI_Allreduce
// alone. A worker that dies would leave the others blocked in such a call for ever (Open MPI 4.1
// on one host: see worker_watch.h); the group's WorkerWatch sees it and calls `on_lost`.
//
// MPI is started once per process (MPI_Init_thread, MPI_THREAD_SERIALIZED: the collectives are
// called from the host thread and from the device thread that runs the step across workers,
// never two at once) and finalized once (finalize_mpi), as MPI allows.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "virtualgpu/workers/worker_group.h"
#include "virtualgpu/workers/worker_watch.h"

namespace mirrorlab::vgpu {

struct MpiCommunicator;  // mpi_communicator.h

// MPI_Init_thread once (MPI_THREAD_SERIALIZED); later calls do nothing. Throws
// std::runtime_error when MPI cannot give that thread level.
void initialize_mpi();
// MPI_Finalize when MPI was started and not yet finalized.
void finalize_mpi();
// "Open MPI v4.1.4" (MPI_Get_library_version's first line, shortened).
std::string mpi_library_version();

class MpiWorkerGroup final : public WorkerGroup {
 public:
  // Every rank of MPI_COMM_WORLD calls it (collective): starts MPI if needed, duplicates the
  // world communicator, exchanges every worker's host and pid, and starts the watch.
  MpiWorkerGroup(std::chrono::milliseconds timeout, WorkerWatch::Lost on_lost);
  ~MpiWorkerGroup() override;
  MpiWorkerGroup(const MpiWorkerGroup&) = delete;
  MpiWorkerGroup& operator=(const MpiWorkerGroup&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::vector<WorkerPlace>& places() const override { return places_; }
  std::string transport() const override;

  void all_reduce_sum(std::span<float> values) override;
  void all_reduce_sum(std::span<double> values) override;
  using WorkerGroup::all_reduce_sum;
  void broadcast(std::span<float> values, int root) override;
  std::vector<std::string> all_gather(const std::string& mine) override;
  // MPI_Ibcast of the length, tested every millisecond (asleep between: a follower of a paused
  // window costs no core), then MPI_Bcast of the text. Outside the watch's timeout.
  std::string wait_for_text(const std::string& text, int root) override;
  void set_activity(std::string activity) override;

  // The last collectives: a barrier (every worker is past its other collectives), the watch
  // stopped, a second barrier (every worker has stopped watching: a peer may exit from now on).
  // Call it on every worker before leaving.
  void finish();
  // The watch of the other workers (null while the group starts): for what builds on the group.
  WorkerWatch* watch() { return watch_.get(); }
  // Plain MPI_Allreduce of `values` on this group's communicator, nothing around it: the
  // benchmark's baseline.
  void plain_mpi_allreduce(std::span<float> values);
  // The group's MPI_Comm (mpi_communicator.h, which includes mpi.h), for what builds on it:
  // NCCL across processes broadcasts its unique id over it.
  const MpiCommunicator& communicator() const { return *comm_; }

 private:
  std::unique_ptr<MpiCommunicator> comm_;  // this header needs no mpi.h
  int rank_ = 0;
  int size_ = 1;
  std::vector<WorkerPlace> places_;
  std::unique_ptr<WorkerWatch> watch_;
  bool finished_ = false;
};

}  // namespace mirrorlab::vgpu
