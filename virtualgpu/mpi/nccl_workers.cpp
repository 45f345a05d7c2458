// NCCL across processes (see nccl_workers.h). Built only with MPI and NCCL.
#include "virtualgpu/mpi/nccl_workers.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdexcept>

#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/device.h"
#include "virtualgpu/mpi/mpi_communicator.h"
#include "virtualgpu/nccl_all_reduce.h"

namespace mirrorlab::vgpu {
namespace {

void check_nccl(ncclResult_t result, const char* call) {
  if (result == ncclSuccess) return;
  const char* detail = ncclGetLastError(nullptr);
  throw std::runtime_error(
      std::string(call) + " failed: " + ncclGetErrorString(result) +
      (detail != nullptr && *detail != '\0' ? std::string(" (") + detail + ")" : std::string()));
}

class NcclWorkerGroup final : public WorkerGroup {
 public:
  NcclWorkerGroup(MpiWorkerGroup& mpi, Device& gpu) : mpi_(&mpi), gpu_(&gpu) {
    ncclUniqueId id{};
    if (mpi.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    {
      WorkerWatch::InCollective in(mpi.watch(), "the broadcast of NCCL's unique id");
      check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MpiCommunicatorAccess::of(mpi)),
                "MPI_Bcast");
    }
    CurrentGpuGuard on(gpu.cuda_ordinal());
    WorkerWatch::InCollective in(mpi.watch(), "ncclCommInitRank");
    check_nccl(ncclCommInitRank(&comm_, mpi.size(), id, mpi.rank()), "ncclCommInitRank");
  }
  ~NcclWorkerGroup() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }
  NcclWorkerGroup(const NcclWorkerGroup&) = delete;
  NcclWorkerGroup& operator=(const NcclWorkerGroup&) = delete;

  int rank() const override { return mpi_->rank(); }
  int size() const override { return mpi_->size(); }
  const std::vector<WorkerPlace>& places() const override { return mpi_->places(); }
  std::string transport() const override {
    return "ncclAllReduce across processes (NCCL " +
           nccl_version_text(nccl_runtime().version_code) +
           ", ncclCommInitRank with the unique id sent by MPI_Bcast)";
  }
  void all_reduce_sum(std::span<float> values) override { mpi_->all_reduce_sum(values); }
  void all_reduce_sum(std::span<double> values) override { mpi_->all_reduce_sum(values); }
  void all_reduce_sum(std::span<float> values, Device& holder) override {
    if (&holder != gpu_) {  // a buffer of another device: through the host, over MPI
      WorkerGroup::all_reduce_sum(values, holder);
      return;
    }
    const auto stream = static_cast<cudaStream_t>(gpu_->cuda_stream());
    CurrentGpuGuard on(gpu_->cuda_ordinal());
    WorkerWatch::InCollective in(mpi_->watch(), "the all-reduce across workers (NCCL)");
    check_nccl(ncclAllReduce(values.data(), values.data(), values.size(), ncclFloat, ncclSum, comm_,
                             stream),
               "ncclAllReduce");
    MIRRORLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  void broadcast(std::span<float> values, int root) override { mpi_->broadcast(values, root); }
  std::vector<std::string> all_gather(const std::string& mine) override {
    return mpi_->all_gather(mine);
  }
  void set_activity(std::string activity) override { mpi_->set_activity(std::move(activity)); }

 private:
  MpiWorkerGroup* mpi_;
  Device* gpu_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

bool nccl_across_processes_built() { return true; }

std::unique_ptr<WorkerGroup> make_nccl_worker_group(MpiWorkerGroup& mpi, Device& gpu) {
  if (!gpu.is_cuda()) {
    throw std::invalid_argument("NCCL across processes needs a CUDA GPU; " + gpu.name() +
                                " is a CPU-backed virtual GPU");
  }
  return std::make_unique<NcclWorkerGroup>(mpi, gpu);
}

}  // namespace mirrorlab::vgpu
