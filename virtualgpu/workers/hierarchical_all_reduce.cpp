#include "virtualgpu/workers/hierarchical_all_reduce.h"

#include "virtualgpu/devices/device.h"

namespace mirrorlab::vgpu {

HierarchicalAllReduce::HierarchicalAllReduce(std::unique_ptr<AllReduce> within,
                                             WorkerGroup& workers)
    : within_(std::move(within)), workers_(&workers) {}

void HierarchicalAllReduce::run_rank(int rank, CollectiveGroup& group, ReduceOp op) const {
  // 1. The worker's sum in every buffer (the mean is taken at the end, over every replica).
  within_->run_rank(rank, group, ReduceOp::kSum);
  const int first = within_->num_steps(group.size());
  // 2. Run once for the worker by the last of its ranks to arrive, while the others wait.
  group.end_step(rank, first, kAcrossWorkersPhase, [&] {
    // The host reads and writes the first buffer: nothing may still read or write it on a GPU.
    group.wait_for_devices();
    std::span<float> buffer = group.buffer(0);
    if (group.devices().empty()) {
      workers_->all_reduce_sum(buffer);
    } else {
      workers_->all_reduce_sum(buffer, *group.devices()[0]);
    }
  });
  // 3. Every other device takes the sum from the first.
  if (rank != 0 && group.count() > 0)
    group.transfer(0, rank, 0, group.count(), TransferKind::kCopy);
  group.end_step(rank, first + 1, kBackToDevicesPhase);
  if (op == ReduceOp::kMean) {
    // Every replica of every worker counts: the mean divides by all of them.
    group.scale(rank,
                1.0f / (static_cast<float>(group.size()) * static_cast<float>(workers_->size())));
  }
}

double HierarchicalAllReduce::bytes_moved(int n, std::size_t bytes) const {
  const double s = static_cast<double>(bytes);
  return within_->bytes_moved(n, bytes) + 2.0 * s + 2.0 * (n - 1) * s;
}

}  // namespace mirrorlab::vgpu
