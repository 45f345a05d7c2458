// The NCCL all-reduce (see nccl_all_reduce.h). Built only with NCCL.
#include "virtualgpu/nccl_all_reduce.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "virtualgpu/all_reduce_choice.h"
#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/device.h"

namespace mirrorlab::vgpu {
namespace {

[[noreturn]] void throw_nccl_error(ncclResult_t result, const char* expression, const char* file,
                                   int line) {
  // ncclGetLastError(nullptr) gives the last error message of any communicator of the process.
  const char* detail = ncclGetLastError(nullptr);
  throw std::runtime_error(
      std::string(expression) + " failed at " + file + ":" + std::to_string(line) + ": " +
      ncclGetErrorString(result) +
      (detail != nullptr && *detail != '\0' ? std::string(" (") + detail + ")" : std::string()));
}

#define MIRRORLAB_NCCL_CHECK(expr)                                         \
  do {                                                                     \
    const ncclResult_t mirrorlab_nccl_status_ = (expr);                    \
    if (mirrorlab_nccl_status_ != ncclSuccess) {                           \
      throw_nccl_error(mirrorlab_nccl_status_, #expr, __FILE__, __LINE__); \
    }                                                                      \
  } while (0)

class NcclAllReduce final : public AllReduce {
 public:
  NcclAllReduce(const std::vector<Device*>& devices, bool multi_rank) {
    std::vector<int> ordinals;
    for (const Device* d : devices) {
      ordinals.push_back(d->cuda_ordinal());
      streams_.push_back(static_cast<cudaStream_t>(d->cuda_stream()));
    }
    if (multi_rank) {
      // NCCL 2.30's experimental mode for up to 2 ranks per GPU; a value the user set wins.
      setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", /*overwrite=*/0);
    }
    comms_.assign(devices.size(), nullptr);
    int previous = 0;
    MIRRORLAB_CUDA_CHECK(cudaGetDevice(&previous));
    // ncclCommInitAll switches GPUs as it goes: put the caller's back afterwards.
    const ncclResult_t made =
        ncclCommInitAll(comms_.data(), static_cast<int>(comms_.size()), ordinals.data());
    cudaSetDevice(previous);
    if (made != ncclSuccess) {
      comms_.clear();
      throw_nccl_error(made, "ncclCommInitAll(comms, n, ordinals)", __FILE__, __LINE__);
    }
  }
  ~NcclAllReduce() override {
    for (ncclComm_t comm : comms_) {
      if (comm != nullptr) ncclCommDestroy(comm);
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
    MIRRORLAB_NCCL_CHECK(ncclGroupStart());
    ncclResult_t queued = ncclSuccess;
    int failed_rank = -1;
    for (int r = 0; r < group.size() && queued == ncclSuccess; ++r) {
      float* data = group.buffer(r).data();
      queued =
          ncclAllReduce(data, data, group.count(), ncclFloat, ncclSum,
                        comms_[static_cast<std::size_t>(r)], streams_[static_cast<std::size_t>(r)]);
      if (queued != ncclSuccess) failed_rank = r;
    }
    const ncclResult_t ended = ncclGroupEnd();  // always close the group we opened
    if (queued != ncclSuccess) {
      throw_nccl_error(queued, ("ncclAllReduce for rank " + std::to_string(failed_rank)).c_str(),
                       __FILE__, __LINE__);
    }
    MIRRORLAB_NCCL_CHECK(ended);
    // ncclGroupEnd only queued the work: the step ends when every rank's stream has done it.
    for (cudaStream_t stream : streams_) {
      MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
  }

  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace

NcclRuntime nccl_runtime() {
  NcclRuntime runtime;
  runtime.built = true;
  int version = 0;
  if (ncclGetVersion(&version) == ncclSuccess) runtime.version_code = version;
  return runtime;
}

std::unique_ptr<AllReduce> make_nccl_all_reduce(const std::vector<Device*>& devices,
                                                bool multi_rank) {
  return std::make_unique<NcclAllReduce>(devices, multi_rank);
}

}  // namespace mirrorlab::vgpu
