// A fake NCCL over tests/support/cuda/fake_cuda_api.h's fake GPUs, for tests on machines without a
// GPU: the NCCL all-reduce of one process (init_all: all-reduces queued between group_start and
// group_end, summed at group_end in rank order) and NCCL across processes (unique_id, init_rank:
// each process's worker a thread here, sharing one fake; a rank's all-reduce outside a group waits
// for every rank of its communicator, then all are summed in rank order, as ncclAllReduce's
// result is there once the stream is synchronized). Every call is recorded and checked: buffers
// in device memory of the communicator's GPU, streams alive and on it, ids that unique_id made,
// no group left with ranks missing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/cuda/fake_cuda_api.h"
#include "virtualgpu/collectives/nccl/nccl_api.h"

namespace mirrorlab::testing {

class FakeNcclApi final : public vgpu::NcclApi {
 public:
  explicit FakeNcclApi(FakeCudaApi& cuda) : cuda_(cuda) {}
  ~FakeNcclApi() override = default;

  std::vector<std::string> calls() const;
  std::vector<std::string> violations() const;
  int live_comms() const;
  // init_all and init_rank throw with `message`; or rank `rank`'s all_reduce_sum throws.
  void fail_init(std::string message) { init_failure_ = std::move(message); }
  void fail_all_reduce_of_rank(int rank) { failing_rank_ = rank; }
  // How long a rank's all-reduce across processes waits for the others before it is reported
  // as a hang (and returns).
  void set_hang_after(std::chrono::milliseconds wait) { hang_after_ = wait; }
  // unique_id throws with `message`.
  void fail_unique_id(std::string message) { unique_id_failure_ = std::move(message); }

  std::vector<vgpu::NcclComm> init_all(const std::vector<int>& ordinals) override;
  std::string unique_id() override;
  vgpu::NcclComm init_rank(int ranks, const std::string& id, int rank) override;
  void destroy(vgpu::NcclComm comm) noexcept override;
  void group_start() override;
  void all_reduce_sum(float* data, std::size_t count, vgpu::NcclComm comm,
                      vgpu::GpuStream stream) override;
  void group_end() override;

 private:
  struct Queued {
    float* data;
    std::size_t count;
    int rank;
  };
  // The ranks of one communicator across processes (init_rank): the all-reduces each has brought
  // to the one under way, and how many have completed.
  struct World {
    int ranks = 0;
    std::vector<Queued> queued;
    long completed = 0;
  };
  void all_reduce_across(std::unique_lock<std::mutex>& lock, World& world, const Queued& mine);
  static void sum_in_rank_order(std::vector<Queued>& queued);

  FakeCudaApi& cuda_;
  mutable std::mutex mutex_;
  std::map<vgpu::NcclComm, std::pair<int, int>> comms_;  // live: (rank, gpu)
  std::map<vgpu::NcclComm, std::string> world_of_;       // init_rank's communicators: their id
  std::map<std::string, World> worlds_;                  // by unique id
  std::condition_variable world_changed_;
  std::vector<std::string> calls_, violations_;
  std::vector<Queued> queued_;
  bool in_group_ = false, group_failed_ = false;
  int next_id_ = 1, ranks_ = 0;
  std::string init_failure_, unique_id_failure_;
  std::chrono::milliseconds hang_after_{10000};
  int failing_rank_ = -1;
};

}  // namespace mirrorlab::testing
