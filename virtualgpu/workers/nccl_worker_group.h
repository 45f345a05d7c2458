// NCCL across the workers' processes, over any WorkerGroup (see mpi/nccl_workers.h for how a
// job gets one): one NCCL communicator of W ranks, one per worker, on the GPU of the worker's
// first device. Worker 0 makes the communicator's unique id, the workers' own group carries it
// to every worker (wait_for_text), and each joins with it. The step across workers then sums that
// device's buffers where they are, on the GPU (the NCCL all-reduce on the device's stream, then
// the stream synchronized), instead of through host memory; every other exchange (the
// statistics, the flags, the initial broadcast) still goes through the workers' group.
//
// Every NCCL and CUDA call goes through NcclApi and the device's CudaApi, so this runs against the
// tests' fakes on any machine (tests/virtualgpu/test_nccl_worker_group.cpp); mpi/nccl_workers.cpp
// gives it the NCCL library and MPI's group.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "virtualgpu/collectives/nccl/nccl_api.h"
#include "virtualgpu/workers/worker_group.h"
#include "virtualgpu/workers/worker_watch.h"

namespace mirrorlab::vgpu {

class Device;

class NcclWorkerGroup final : public WorkerGroup {
 public:
  // Collective: every worker of `base` constructs one, each with its own `gpu` (a CUDA device:
  // std::invalid_argument otherwise). `watch` (may be null) names the collective a lost worker
  // left the others in. Throws what NcclApi throws when the communicator cannot be made.
  NcclWorkerGroup(WorkerGroup& base, Device& gpu, NcclApi& nccl, WorkerWatch* watch);
  ~NcclWorkerGroup() override;
  NcclWorkerGroup(const NcclWorkerGroup&) = delete;
  NcclWorkerGroup& operator=(const NcclWorkerGroup&) = delete;

  int rank() const override { return base_->rank(); }
  int size() const override { return base_->size(); }
  const std::vector<WorkerPlace>& places() const override { return base_->places(); }
  std::string transport() const override;
  void all_reduce_sum(std::span<float> values) override { base_->all_reduce_sum(values); }
  void all_reduce_sum(std::span<double> values) override { base_->all_reduce_sum(values); }
  // A buffer of `gpu` (the device given at construction): summed by NCCL on it. Any other
  // device's: through the host, over the base group.
  void all_reduce_sum(std::span<float> values, Device& holder) override;
  void broadcast(std::span<float> values, int root) override { base_->broadcast(values, root); }
  std::vector<std::string> all_gather(const std::string& mine) override {
    return base_->all_gather(mine);
  }
  std::string wait_for_text(const std::string& text, int root) override {
    return base_->wait_for_text(text, root);
  }
  void set_activity(std::string activity) override { base_->set_activity(std::move(activity)); }

 private:
  WorkerGroup* base_;
  Device* gpu_;
  NcclApi* nccl_;
  WorkerWatch* watch_;
  NcclComm comm_ = nullptr;
};

}  // namespace mirrorlab::vgpu
