#include "virtualgpu/collectives/collective_replay.h"

#include <algorithm>
#include <stdexcept>

namespace mirrorlab::vgpu {

std::vector<std::vector<ChunkContributors>> replay_contributions(
    int ranks, std::size_t count, std::span<const CollectiveStep> steps, int all_ranks,
    std::string_view across_phase) {
  all_ranks = std::max(all_ranks, ranks);
  if (ranks < 1 || all_ranks > 64) {
    throw std::invalid_argument("replay_contributions: 1 to 64 ranks, not " +
                                std::to_string(all_ranks));
  }
  // Cut the buffer at every place a transfer starts or ends.
  std::vector<std::size_t> cuts{0, count};
  for (const CollectiveStep& step : steps) {
    for (const Transfer& t : step.transfers) {
      cuts.push_back(std::min(t.begin, count));
      cuts.push_back(std::min(t.end, count));
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  const std::size_t segments = cuts.size() - 1;
  auto segment_of = [&](std::size_t element) {
    return static_cast<std::size_t>(std::lower_bound(cuts.begin(), cuts.end(), element) -
                                    cuts.begin());
  };

  const std::uint64_t everyone = ranks == 64 ? ~0ull : (1ull << ranks) - 1;
  std::vector<std::vector<std::uint64_t>> masks(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) masks[static_cast<std::size_t>(r)].assign(segments, 1ull << r);
  for (const CollectiveStep& step : steps) {
    if (step.transfers.empty()) {
      if (!across_phase.empty() && step.phase == across_phase) {
        const std::uint64_t every_worker = all_ranks == 64 ? ~0ull : (1ull << all_ranks) - 1;
        for (std::uint64_t& m : masks[0]) m |= every_worker & ~everyone;
      } else {
        for (auto& m : masks) std::fill(m.begin(), m.end(), everyone);
      }
      continue;
    }
    const auto before = masks;
    for (const Transfer& t : step.transfers) {
      if (t.src < 0 || t.src >= ranks || t.dst < 0 || t.dst >= ranks) continue;
      const auto& from = before[static_cast<std::size_t>(t.src)];
      auto& to = masks[static_cast<std::size_t>(t.dst)];
      for (std::size_t s = segment_of(t.begin); s < segment_of(t.end); ++s) {
        to[s] = t.kind == TransferKind::kReduce ? to[s] | from[s] : from[s];
      }
    }
  }

  std::vector<std::vector<ChunkContributors>> result(static_cast<std::size_t>(ranks));
  for (std::size_t r = 0; r < masks.size(); ++r) {
    for (std::size_t s = 0; s < segments; ++s) {
      result[r].push_back(ChunkContributors{cuts[s], cuts[s + 1], masks[r][s]});
    }
  }
  return result;
}

}  // namespace mirrorlab::vgpu
