// Which ranks' values each part of each buffer holds, after the first k steps of an all-reduce:
// what the GUI draws when it steps through one (chunks filling up with every replica's share),
// computed from the steps' transfers alone, so it can be redrawn for any step afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "virtualgpu/collectives/collective.h"

namespace mirrorlab::vgpu {

// Elements [begin, end) of one rank's buffer hold the sum of the ranks set in `contributors`
// (bit r: rank r's original values).
struct ChunkContributors {
  std::size_t begin = 0, end = 0;
  std::uint64_t contributors = 0;
};

// Per rank (at most 64), its buffer of `count` elements cut at every transfer boundary, after
// `steps` have run in order. Within a step every transfer reads what its source held before the
// step (as the algorithms guarantee: a step never reads what the same step writes). A step with
// no transfers is an opaque all-reduce (NCCL): afterwards every rank holds every rank's share.
// Where these ranks are the first worker's of several, `all_ranks` of them in all: a step with
// no transfers whose phase is `across_phase` sums every worker's first rank with the others',
// after which rank 0 holds all of them (bits `ranks` and up: the other workers' ranks).
std::vector<std::vector<ChunkContributors>> replay_contributions(
    int ranks, std::size_t count, std::span<const CollectiveStep> steps, int all_ranks = 0,
    std::string_view across_phase = {});

}  // namespace mirrorlab::vgpu
