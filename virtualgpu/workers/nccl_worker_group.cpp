#include "virtualgpu/workers/nccl_worker_group.h"

#include <stdexcept>

#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"
#include "virtualgpu/cuda/cuda_api.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::vgpu {

NcclWorkerGroup::NcclWorkerGroup(WorkerGroup& base, Device& gpu, NcclApi& nccl, WorkerWatch* watch)
    : base_(&base), gpu_(&gpu), nccl_(&nccl), watch_(watch) {
  if (!gpu.is_cuda() || gpu.cuda_api() == nullptr) {
    throw std::invalid_argument("NCCL across processes needs a CUDA GPU; " + gpu.name() +
                                " is a CPU-backed virtual GPU");
  }
  // Worker 0's id, on every worker. Worker 0 makes it before it meets the others, so a failure
  // there reaches them as an empty id, and each then refuses rather than joining with nothing.
  std::string mine;
  std::string failure;
  if (base.rank() == 0) {
    try {
      mine = nccl.unique_id();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  const std::string id = base.wait_for_text(mine, 0);
  if (!failure.empty()) throw std::runtime_error(failure);
  if (id.empty()) {
    throw std::runtime_error(
        "worker 0 could not make the NCCL communicator's unique id "
        "(ncclGetUniqueId failed there: its error says why)");
  }
  CurrentGpu on(*gpu.cuda_api(), gpu.cuda_ordinal());
  WorkerWatch::InCollective in(watch_, "ncclCommInitRank");
  comm_ = nccl.init_rank(base.size(), id, base.rank());
}

NcclWorkerGroup::~NcclWorkerGroup() {
  if (comm_ != nullptr) nccl_->destroy(comm_);
}

std::string NcclWorkerGroup::transport() const {
  return "ncclAllReduce across processes (NCCL " + nccl_version_text(nccl_runtime().version_code) +
         ", ncclCommInitRank; the unique id and all else over " + base_->transport() + ")";
}

void NcclWorkerGroup::all_reduce_sum(std::span<float> values, Device& holder) {
  if (&holder != gpu_) {  // a buffer of another device: through the host, over the base group
    WorkerGroup::all_reduce_sum(values, holder);
    return;
  }
  CudaApi& cuda = *gpu_->cuda_api();
  CurrentGpu on(cuda, gpu_->cuda_ordinal());
  WorkerWatch::InCollective in(watch_, "the all-reduce across workers (NCCL)");
  nccl_->all_reduce_sum(values.data(), values.size(), comm_, gpu_->cuda_stream());
  cuda.synchronize_stream(gpu_->cuda_stream());
}

}  // namespace mirrorlab::vgpu
