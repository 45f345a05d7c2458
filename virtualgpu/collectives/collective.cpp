#include "virtualgpu/collectives/collective.h"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "virtualgpu/collectives/cuda_transport.h"
#include "virtualgpu/collectives/transport.h"
#include "virtualgpu/cuda/cuda_runtime.h"
#include "virtualgpu/devices/device.h"

namespace mirrorlab::vgpu {
namespace {

// The transport for buffers held by `devices` (devices[i] holds rank i's buffer): host memory
// for every device, or CUDA memory for every device. No devices: host memory (buffers the
// caller vouches are host memory, as in tests). Throws std::invalid_argument for a mix, or for
// CUDA devices in a build without CUDA.
std::unique_ptr<Transport> make_transport(const std::vector<Device*>& devices,
                                          std::vector<std::span<float>> buffers, bool timed,
                                          bool communication_streams) {
  if (devices.empty()) return std::make_unique<HostTransport>(std::move(buffers));
  if (devices.size() != buffers.size()) {
    throw std::invalid_argument("a collective group has " + std::to_string(devices.size()) +
                                " devices but " + std::to_string(buffers.size()) + " buffers");
  }
  const auto on_host = [](const Device* d) { return d->memory().host_accessible(); };
  if (std::all_of(devices.begin(), devices.end(), on_host)) {
    return std::make_unique<HostTransport>(std::move(buffers));
  }
  const auto on_cuda = [&](const Device* d) { return d->is_cuda() && !on_host(d); };
  if (!std::all_of(devices.begin(), devices.end(), on_cuda)) {
    throw std::invalid_argument(
        "an all-reduce cannot mix CPU-backed virtual GPUs with CUDA GPUs: give it devices of one "
        "kind");
  }
  // Without CUDA in the build only a test's fake makes CUDA devices.
  const auto has_api = [](const Device* d) { return d->cuda_api() != nullptr; };
  if (!cuda_built() && !std::all_of(devices.begin(), devices.end(), has_api)) {
    throw std::invalid_argument(no_cuda_error("these buffers are CUDA device memory"));
  }
  return make_cuda_transport(devices, std::move(buffers), timed, communication_streams);
}

}  // namespace

CollectiveGroup::CollectiveGroup(std::vector<std::span<float>> buffers, std::string algorithm,
                                 StepObserver* observer, std::vector<Device*> devices,
                                 PackFrame frame)
    : buffers_(std::move(buffers)),
      algorithm_(std::move(algorithm)),
      observer_(observer),
      devices_(std::move(devices)),
      frame_(frame),
      barrier_(static_cast<int>(std::max<std::size_t>(buffers_.size(), 1))) {
  if (buffers_.empty()) throw std::invalid_argument("an all-reduce needs at least one buffer");
  for (const auto& b : buffers_) {
    if (b.size() != buffers_[0].size()) {
      throw std::invalid_argument("all-reduce buffers differ in length (" +
                                  std::to_string(b.size()) + " vs " +
                                  std::to_string(buffers_[0].size()) + " elements)");
    }
  }
  if (frame_.whole == 0) frame_.whole = buffers_[0].size();
  if (frame_.offset + buffers_[0].size() > frame_.whole || frame_.packs < 1 || frame_.index < 0 ||
      frame_.index >= frame_.packs) {
    throw std::invalid_argument("an all-reduce pack of " + std::to_string(buffers_[0].size()) +
                                " elements at " + std::to_string(frame_.offset) +
                                " does not lie in a buffer of " + std::to_string(frame_.whole) +
                                " (pack " + std::to_string(frame_.index) + " of " +
                                std::to_string(frame_.packs) + ")");
  }
  transport_ =
      make_transport(devices_, buffers_, observer_ != nullptr, frame_.communication_stream);
}

std::pair<std::size_t, std::size_t> CollectiveGroup::part_of_whole(std::size_t part,
                                                                   int parts) const {
  const auto n = static_cast<std::size_t>(parts);
  const std::size_t first = frame_.offset, last = frame_.offset + count();
  const std::size_t begin = std::clamp(part * frame_.whole / n, first, last);
  const std::size_t end = std::clamp((part + 1) * frame_.whole / n, first, last);
  return {begin - first, end - first};
}

CollectiveGroup::~CollectiveGroup() = default;

std::size_t CollectiveGroup::count() const { return buffers_[0].size(); }

void CollectiveGroup::begin(int rank) {
  transport_->publish(rank);
  barrier_.arrive_and_wait([this] { step_start_ = Clock::now(); });
}

void CollectiveGroup::transfer(int src, int dst, std::size_t begin, std::size_t end,
                               TransferKind kind) {
  transport_->move(Transfer{src, dst, begin, end, (end - begin) * sizeof(float), kind, {}, {}});
}

void CollectiveGroup::reduce_broadcast(int rank, std::size_t begin, std::size_t end) {
  transport_->reduce_broadcast(rank, begin, end);
}

void CollectiveGroup::end_step(int rank, int index, std::string_view phase) {
  end_step(rank, index, phase, {});
}

void CollectiveGroup::end_step(int rank, int index, std::string_view phase,
                               const std::function<void()>& whole_group) {
  index += frame_.steps_before;
  if (observer_) observer_->on_rank_step(rank, index, phase);
  barrier_.arrive_and_wait([&] {
    // Every rank is parked in the barrier: the transport holds the whole step.
    if (whole_group) whole_group();
    CollectiveStep step;
    step.algorithm = algorithm_;
    step.index = index;
    step.phase = std::string(phase);
    step.pack = frame_.index;
    step.packs = frame_.packs;
    step.transfers = transport_->settle();  // on a GPU: waits until the step's work is done
    for (Transfer& t : step.transfers) {
      t.begin += frame_.offset;
      t.end += frame_.offset;
    }
    std::sort(step.transfers.begin(), step.transfers.end(),
              [](const Transfer& a, const Transfer& b) {
                return std::tie(a.dst, a.src, a.begin) < std::tie(b.dst, b.src, b.begin);
              });
    step.start = step_start_;
    step.finish = Clock::now();
    if (observer_) observer_->on_step(step);
    step_start_ = Clock::now();
  });
}

void CollectiveGroup::wait_for_devices() { transport_->wait_for_devices(); }

void CollectiveGroup::finish(int rank, ReduceOp op) {
  if (op != ReduceOp::kMean || size() == 1) return;
  transport_->scale(rank, 1.0f / static_cast<float>(size()));
}

void CollectiveGroup::scale(int rank, float factor) { transport_->scale(rank, factor); }

void all_reduce(const std::vector<Device*>& devices, std::vector<std::span<float>> buffers,
                const AllReduce& algorithm, ReduceOp op, StepObserver* observer, PackFrame frame) {
  if (devices.size() != buffers.size()) {
    throw std::invalid_argument("all_reduce: " + std::to_string(devices.size()) + " devices but " +
                                std::to_string(buffers.size()) + " buffers");
  }
  CollectiveGroup group(std::move(buffers), algorithm.name(), observer, devices, frame);
  for (std::size_t r = 0; r < devices.size(); ++r) {
    devices[r]->stream().enqueue([&group, &algorithm, op, rank = static_cast<int>(r)] {
      try {
        algorithm.run_rank(rank, group, op);
      } catch (...) {
        group.abort();  // release the other ranks before reporting
        throw;
      }
    });
  }
  synchronize_all(devices);  // the group lives on this stack frame: wait for every rank
  // Complete on return, on CUDA devices too: the caller may read the buffers, time the call or
  // all-reduce them again (a new group knows nothing of the streams still reading them).
  group.wait_for_devices();
}

void synchronize_all(const std::vector<Device*>& devices) {
  std::exception_ptr first_real, first_abort;
  for (Device* d : devices) {
    try {
      d->stream().synchronize();
    } catch (const CollectiveAborted&) {
      if (!first_abort) first_abort = std::current_exception();
    } catch (...) {
      if (!first_real) first_real = std::current_exception();
    }
  }
  if (first_real) std::rethrow_exception(first_real);
  if (first_abort) std::rethrow_exception(first_abort);
}

}  // namespace mirrorlab::vgpu
