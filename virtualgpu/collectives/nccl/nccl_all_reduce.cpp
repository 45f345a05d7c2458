// The NCCL all-reduce (see nccl_all_reduce.h), over the devices' CudaApi and an NcclApi: built in
// every build, run with the library on GPUs and against the tests' fakes everywhere.
#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"

#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include "virtualgpu/collectives/nccl/nccl_api.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::vgpu {
namespace {

class NcclAllReduce final : public AllReduce {
 public:
  NcclAllReduce(CudaApi& cuda, NcclApi& nccl, const std::vector<Device*>& devices, bool multi_rank)
      : cuda_(cuda), nccl_(nccl) {
    for (Device* d : devices) {
      ordinals_.push_back(d->cuda_ordinal());
      streams_.push_back(d->cuda_stream());
      devices_.push_back(d);
    }
    if (multi_rank) {
      // NCCL 2.30's experimental mode for up to 2 ranks per GPU; a value the user set wins.
      setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", /*overwrite=*/0);
    }
    // ncclCommInitAll switches GPUs as it goes: put the caller's back afterwards.
    const int previous = cuda_.current_gpu();
    try {
      comms_ = nccl_.init_all(ordinals_);
    } catch (...) {
      cuda_.set_current_gpu(previous);
      throw;
    }
    cuda_.set_current_gpu(previous);
  }
  ~NcclAllReduce() override {
    for (NcclComm comm : comms_) {
      if (comm != nullptr) nccl_.destroy(comm);
    }
  }
  NcclAllReduce(const NcclAllReduce&) = delete;
  NcclAllReduce& operator=(const NcclAllReduce&) = delete;

  std::string name() const override { return std::string(kNcclName); }

  void run_rank(int rank, CollectiveGroup& group, ReduceOp op) const override {
    if (group.size() != static_cast<int>(comms_.size())) {
      group.abort();
      throw std::invalid_argument("this NCCL communicator has " + std::to_string(comms_.size()) +
                                  " ranks, the all-reduce " + std::to_string(group.size()));
    }
    group.begin(rank);  // every rank's buffer is complete on its stream
    group.end_step(rank, 0, "all-reduce (NCCL)", [&] { launch_grouped(group); });
    group.finish(rank, op);  // the mean: the same scaling as every other algorithm
  }

  int num_steps(int /*n*/) const override { return 1; }

  // Modelled as NCCL's ring: 2(n-1) chunk steps per rank, like RingAllReduce.
  double bytes_moved(int n, std::size_t bytes) const override {
    return n > 1 ? 5.0 * (n - 1) * static_cast<double>(bytes) : 0.0;
  }

 private:
  // Runs once for the whole group, on the last rank to arrive, while the others wait.
  void launch_grouped(const CollectiveGroup& group) const {
    // Each rank's own stream, or its communication stream beside the compute (PackFrame).
    std::vector<GpuStream> streams = streams_;
    if (group.frame().communication_stream) {
      for (std::size_t r = 0; r < devices_.size(); ++r) {
        streams[r] = devices_[r]->communication_cuda_stream();
      }
    }
    nccl_.group_start();
    std::exception_ptr queued;
    int failed_rank = -1;
    for (int r = 0; r < group.size() && !queued; ++r) {
      float* data = group.buffer(r).data();
      try {
        nccl_.all_reduce_sum(data, group.count(), comms_[static_cast<std::size_t>(r)],
                             streams[static_cast<std::size_t>(r)]);
      } catch (...) {
        queued = std::current_exception();
        failed_rank = r;
      }
    }
    nccl_.group_end();  // always close the group we opened (a failure here throws)
    if (queued) {
      try {
        std::rethrow_exception(queued);
      } catch (const std::exception& e) {
        throw std::runtime_error("the NCCL all-reduce of rank " + std::to_string(failed_rank) +
                                 ": " + e.what());
      }
    }
    // group_end only queued the work, on every rank's stream, before what each rank queues
    // next (its update): nothing to wait for, unless an observer times the step.
    if (group.observed()) {
      for (GpuStream stream : streams) cuda_.synchronize_stream(stream);
    }
  }

  CudaApi& cuda_;
  NcclApi& nccl_;
  std::vector<NcclComm> comms_;
  std::vector<int> ordinals_;
  std::vector<GpuStream> streams_;
  std::vector<Device*> devices_;
};

}  // namespace

std::unique_ptr<AllReduce> make_nccl_all_reduce(const std::vector<Device*>& devices,
                                                bool multi_rank, NcclApi& nccl) {
  if (devices.empty() || devices.front()->cuda_api() == nullptr) {
    throw std::invalid_argument("the NCCL all-reduce needs CUDA devices");
  }
  return std::make_unique<NcclAllReduce>(*devices.front()->cuda_api(), nccl, devices, multi_rank);
}

std::unique_ptr<AllReduce> make_nccl_all_reduce(const std::vector<Device*>& devices,
                                                bool multi_rank) {
  return make_nccl_all_reduce(devices, multi_rank, process_nccl_api());
}

}  // namespace mirrorlab::vgpu
