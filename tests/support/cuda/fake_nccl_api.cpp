// The fake NCCL of tests/support/cuda/fake_nccl_api.h.
#include "tests/support/cuda/fake_nccl_api.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>

namespace mirrorlab::testing {
namespace {

constexpr std::size_t kIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

void* handle(int id) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(0x20000 + id)); }

}  // namespace

// Every rank's buffer := the sum of all, added in rank order (as NCCL's result, the same bits on
// every rank).
void FakeNcclApi::sum_in_rank_order(std::vector<Queued>& queued) {
  std::sort(queued.begin(), queued.end(),
            [](const Queued& a, const Queued& b) { return a.rank < b.rank; });
  for (std::size_t i = 0; i < queued.front().count; ++i) {
    float sum = 0.0f;
    for (const Queued& q : queued) sum += q.data[i];
    for (const Queued& q : queued) q.data[i] = sum;
  }
}

std::vector<std::string> FakeNcclApi::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::vector<std::string> FakeNcclApi::violations() const {
  std::lock_guard lock(mutex_);
  return violations_;
}

int FakeNcclApi::live_comms() const {
  std::lock_guard lock(mutex_);
  return static_cast<int>(comms_.size());
}

std::vector<vgpu::NcclComm> FakeNcclApi::init_all(const std::vector<int>& ordinals) {
  std::lock_guard lock(mutex_);
  calls_.push_back("init_all " + std::to_string(ordinals.size()));
  // ncclCommInitAll switches GPUs as it goes, as the library does: the caller must put its own
  // back.
  if (!ordinals.empty()) cuda_.set_current_gpu(ordinals.back());
  if (!init_failure_.empty()) throw std::runtime_error(init_failure_);
  std::vector<vgpu::NcclComm> made;
  for (std::size_t r = 0; r < ordinals.size(); ++r) {
    vgpu::NcclComm comm = handle(next_id_++);
    comms_[comm] = {static_cast<int>(r), ordinals[r]};
    made.push_back(comm);
  }
  ranks_ = static_cast<int>(ordinals.size());
  return made;
}

std::string FakeNcclApi::unique_id() {
  std::lock_guard lock(mutex_);
  calls_.push_back("unique_id");
  if (!unique_id_failure_.empty()) throw std::runtime_error(unique_id_failure_);
  std::string id = "fake-nccl-id-" + std::to_string(next_id_++);
  id.resize(kIdBytes, '\0');  // as long as NCCL's
  worlds_[id];
  return id;
}

vgpu::NcclComm FakeNcclApi::init_rank(int ranks, const std::string& id, int rank) {
  const int gpu = cuda_.current_gpu();
  std::lock_guard lock(mutex_);
  calls_.push_back("init_rank " + std::to_string(rank) + "/" + std::to_string(ranks) + " gpu" +
                   std::to_string(gpu) + " " + id.substr(0, id.find('\0')));
  if (id.size() != kIdBytes) {
    throw std::invalid_argument("an NCCL unique id is " + std::to_string(kIdBytes) +
                                " bytes, not " + std::to_string(id.size()));
  }
  if (!init_failure_.empty()) throw std::runtime_error(init_failure_);
  const auto world = worlds_.find(id);
  if (world == worlds_.end()) {
    violations_.push_back("init_rank with an id unique_id never made");
    return nullptr;
  }
  if (rank < 0 || rank >= ranks) {
    violations_.push_back("init_rank of rank " + std::to_string(rank) + " of " +
                          std::to_string(ranks));
  }
  if (world->second.ranks != 0 && world->second.ranks != ranks) {
    violations_.push_back("init_rank: ranks disagree on the communicator's size");
  }
  world->second.ranks = ranks;
  vgpu::NcclComm comm = handle(next_id_++);
  comms_[comm] = {rank, gpu};
  world_of_[comm] = id;
  return comm;
}

void FakeNcclApi::all_reduce_across(std::unique_lock<std::mutex>& lock, World& world,
                                    const Queued& mine) {
  world.queued.push_back(mine);
  const long completed = world.completed;
  if (static_cast<int>(world.queued.size()) == world.ranks) {
    sum_in_rank_order(world.queued);
    world.queued.clear();
    ++world.completed;
    world_changed_.notify_all();
    return;
  }
  if (!world_changed_.wait_for(lock, hang_after_, [&] { return world.completed != completed; })) {
    violations_.push_back("rank " + std::to_string(mine.rank) + "'s all_reduce waited " +
                          std::to_string(hang_after_.count()) +
                          " ms for the other ranks: NCCL would hang");
    world.queued.clear();
  }
}

void FakeNcclApi::destroy(vgpu::NcclComm comm) noexcept {
  std::lock_guard lock(mutex_);
  calls_.push_back("destroy");
  if (comms_.erase(comm) == 0) violations_.push_back("destroy of a communicator not alive");
  world_of_.erase(comm);
}

void FakeNcclApi::group_start() {
  std::lock_guard lock(mutex_);
  calls_.push_back("group_start");
  if (in_group_) violations_.push_back("group_start inside a group");
  in_group_ = true;
}

void FakeNcclApi::all_reduce_sum(float* data, std::size_t count, vgpu::NcclComm comm,
                                 vgpu::GpuStream stream) {
  std::unique_lock lock(mutex_);
  const auto found = comms_.find(comm);
  const int rank = found == comms_.end() ? -1 : found->second.first;
  calls_.push_back("all_reduce rank" + std::to_string(rank) + " n=" + std::to_string(count));
  const auto world = world_of_.find(comm);
  if (!in_group_ && world == world_of_.end()) violations_.push_back("all_reduce outside a group");
  if (found == comms_.end()) {
    violations_.push_back("all_reduce on a communicator not alive");
    return;
  }
  cuda_.check_device_range(data, count * sizeof(float), found->second.second,
                           "all_reduce of rank " + std::to_string(rank));
  cuda_.check_stream_on(stream, found->second.second, "all_reduce of rank " + std::to_string(rank));
  if (rank == failing_rank_) {
    group_failed_ = in_group_;  // NCCL then reports the failure at group_end too; nothing runs
    throw std::runtime_error("ncclAllReduce: the fake was told to fail rank " +
                             std::to_string(rank));
  }
  if (world != world_of_.end() && !in_group_) {
    all_reduce_across(lock, worlds_[world->second], {data, count, rank});
    return;
  }
  queued_.push_back({data, count, rank});
}

void FakeNcclApi::group_end() {
  std::lock_guard lock(mutex_);
  calls_.push_back("group_end");
  if (!in_group_) violations_.push_back("group_end without group_start");
  in_group_ = false;
  if (static_cast<int>(queued_.size()) == ranks_ && ranks_ > 0) {  // the whole group: sum
    sum_in_rank_order(queued_);
  } else if (!queued_.empty() && !group_failed_) {
    violations_.push_back("group_end with " + std::to_string(queued_.size()) + " of " +
                          std::to_string(ranks_) + " ranks queued: NCCL would hang");
  }
  queued_.clear();
  group_failed_ = false;
}

}  // namespace mirrorlab::testing
