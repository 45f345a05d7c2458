#include "core/session/step_figures.h"

#include <algorithm>

namespace mirrorlab::core {

std::optional<double> all_reduce_bytes(const RecordedStep& record, int replica, bool received,
                                       std::size_t steps) {
  if (record.step < 0 || record.collective_steps.empty()) return std::nullopt;
  double bytes = 0;
  for (std::size_t s = 0; s < std::min(steps, record.collective_steps.size()); ++s) {
    for (const vgpu::Transfer& t : record.collective_steps[s].transfers) {
      if ((received ? t.dst : t.src) == replica) bytes += static_cast<double>(t.bytes);
    }
  }
  return bytes;
}

std::optional<double> gradient_spread(const RecordedStep& record, bool before) {
  const auto values = [before](const ReplicaRecord& r) -> const std::vector<float>& {
    return before ? r.gradient_before : r.gradient_after;
  };
  if (record.replicas.empty() || values(record.replicas[0]).empty()) return std::nullopt;
  double widest = 0;
  for (std::size_t i = 0; i < values(record.replicas[0]).size(); ++i) {
    float lo = values(record.replicas[0])[i], hi = lo;
    for (const ReplicaRecord& rep : record.replicas) {
      if (i >= values(rep).size()) return std::nullopt;
      lo = std::min(lo, values(rep)[i]);
      hi = std::max(hi, values(rep)[i]);
    }
    widest = std::max(widest, static_cast<double>(hi) - lo);
  }
  return widest;
}

std::optional<bool> weights_in_sync(const RecordedStep& record) {
  if (record.replicas.empty()) return std::nullopt;
  bool same = true;
  for (const ReplicaRecord& r : record.replicas) {
    if (!r.has_fingerprint) return std::nullopt;
    same = same && r.fingerprint == record.replicas[0].fingerprint;
  }
  return same;
}

std::optional<double> gradient_weight(const RecordedStep& record, LossScaling scaling) {
  if (record.step < 0 || record.replicas.empty() || record.indices.empty()) return std::nullopt;
  double weight = 0;
  for (const ReplicaRecord& rep : record.replicas) {
    weight += static_cast<double>(loss_scale(
                  scaling, rep.shard_count, static_cast<int>(record.replicas.size()),
                  record.indices.size(), record.batch_per_replica * record.replicas.size())) *
              static_cast<double>(rep.shard_count);
  }
  return weight;
}

std::optional<double> mean_step_ms(const std::vector<StepRecord>& steps, std::size_t last) {
  if (steps.empty() || last == 0) return std::nullopt;
  const std::size_t n = std::min(steps.size(), last);
  double sum = 0;
  for (std::size_t i = steps.size() - n; i < steps.size(); ++i) sum += steps[i].seconds;
  return 1000.0 * sum / static_cast<double>(n);
}

}  // namespace mirrorlab::core
