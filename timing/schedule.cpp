#include "timing/schedule.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace mirrorlab::timing {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

void require_ranks(int ranks) {
  if (ranks < 1) throw std::invalid_argument("a schedule needs at least one rank");
}

Schedule empty_schedule(int ranks, double bytes) {
  require_ranks(ranks);
  if (!(bytes >= 0)) throw std::invalid_argument("a schedule's bytes must be 0 or more");
  Schedule s;
  s.ranks = ranks;
  s.bytes = bytes;
  return s;
}

}  // namespace

double memory_traffic(Work work, double bytes) {
  switch (work) {
    case Work::kCopy:
      return 2 * bytes;
    case Work::kReduce:
      return 3 * bytes;
    case Work::kRead:
    case Work::kWrite:
      return bytes;
  }
  return 0;
}

const char* to_string(Work work) {
  switch (work) {
    case Work::kCopy:
      return "copy";
    case Work::kReduce:
      return "reduce";
    case Work::kRead:
      return "read";
    case Work::kWrite:
      return "write";
  }
  return "?";
}

namespace {

// Bytes of every move into (or out of) `rank` from any other end.
double bytes_through(const Schedule& s, int rank, bool into) {
  double total = 0;
  for (const ScheduleStep& step : s.steps) {
    for (const Move& m : step.moves) {
      if ((into ? m.to : m.from) == rank && m.from != m.to) total += m.bytes;
    }
  }
  return total;
}

}  // namespace

double Schedule::received(int rank) const { return bytes_through(*this, rank, true); }
double Schedule::sent(int rank) const { return bytes_through(*this, rank, false); }

double Schedule::memory_traffic() const {
  double total = 0;
  for (const ScheduleStep& step : steps) {
    for (const Move& m : step.moves) total += timing::memory_traffic(m.work, m.bytes);
  }
  return total;
}

Schedule reduce_to_one_schedule(int ranks, double bytes, int destination) {
  Schedule s = empty_schedule(ranks, bytes);
  if (destination < 0 || destination >= ranks) {
    throw std::invalid_argument("the destination " + std::to_string(destination) +
                                " is not one of the " + std::to_string(ranks) + " ranks");
  }
  if (ranks == 1) return s;
  ScheduleStep reduce{"reduce", {}}, broadcast{"broadcast", {}};
  for (int r = 0; r < ranks; ++r) {
    if (r == destination) continue;
    reduce.moves.push_back({r, destination, bytes, Work::kReduce});
    broadcast.moves.push_back({destination, r, bytes, Work::kCopy});
  }
  s.steps = {reduce, broadcast};
  return s;
}

Schedule ring_schedule(int ranks, double bytes) {
  Schedule s = empty_schedule(ranks, bytes);
  const double chunk = bytes / ranks;
  for (int phase = 0; phase < 2; ++phase) {
    for (int k = 0; k + 1 < ranks; ++k) {
      ScheduleStep step{phase == 0 ? "reduce-scatter" : "all-gather", {}};
      for (int r = 0; r < ranks; ++r) {
        step.moves.push_back(
            {mod(r - 1, ranks), r, chunk, phase == 0 ? Work::kReduce : Work::kCopy});
      }
      s.steps.push_back(step);
    }
  }
  return s;
}

Schedule one_shot_schedule(int ranks, double bytes) {
  Schedule s = empty_schedule(ranks, bytes);
  s.peer_kernels = true;
  if (ranks == 1) return s;
  const double slice = bytes / ranks;
  ScheduleStep step{"sum and write back", {}};
  for (int r = 0; r < ranks; ++r) {
    for (int j = 0; j < ranks; ++j) {  // read slice r of every buffer, its own included
      step.moves.push_back({j, r, slice, Work::kRead, r, r});
    }
    for (int j = 0; j < ranks; ++j) {  // write the sum to slice r of every buffer
      step.moves.push_back({r, j, slice, Work::kWrite, r});
    }
  }
  s.steps = {step};
  return s;
}

int tree_depth(int ranks, int gpus_per_node) {
  require_ranks(ranks);
  if (gpus_per_node < 1 || ranks % gpus_per_node != 0) {
    throw std::invalid_argument(std::to_string(ranks) + " ranks are not whole nodes of " +
                                std::to_string(gpus_per_node));
  }
  const int nodes = ranks / gpus_per_node;
  int across = 0;
  while ((1 << across) < nodes) ++across;  // ceil(log2(nodes))
  return (gpus_per_node - 1) + across;
}

Schedule tree_schedule(int ranks, int gpus_per_node, double bytes) {
  Schedule s = empty_schedule(ranks, bytes);
  const int depth = tree_depth(ranks, gpus_per_node);
  if (ranks == 1) return s;
  // Each rank's level (hops from the root) in two trees, and its parent. Inside a node the
  // ranks form a chain toward the node's first rank; across nodes the first ranks form a
  // binary tree (heap order) rooted at node 0, and the second tree is the first mirrored: node
  // k takes the place of node nodes-1-k, as NCCL's double binary tree makes the leaves of one
  // the inner nodes of the other where it can.
  const int nodes = ranks / gpus_per_node;
  struct Edge {
    int child, parent, level;
  };
  std::vector<std::vector<Edge>> trees(2);
  for (int t = 0; t < 2; ++t) {
    const auto node_at = [&](int heap) { return t == 0 ? heap : nodes - 1 - heap; };
    std::vector<int> node_level(static_cast<std::size_t>(nodes), 0);
    for (int h = 1; h < nodes; ++h) {
      node_level[static_cast<std::size_t>(h)] =
          node_level[static_cast<std::size_t>((h - 1) / 2)] + 1;
      trees[t].push_back({node_at(h) * gpus_per_node, node_at((h - 1) / 2) * gpus_per_node,
                          node_level[static_cast<std::size_t>(h)]});
    }
    for (int h = 0; h < nodes; ++h) {
      const int first = node_at(h) * gpus_per_node;
      for (int g = 1; g < gpus_per_node; ++g) {
        trees[t].push_back({first + g, first + g - 1, node_level[static_cast<std::size_t>(h)] + g});
      }
    }
  }
  const double half = bytes / 2;
  for (int level = depth; level >= 1; --level) {  // up: the deepest edges first
    ScheduleStep step{"up the trees", {}};
    for (const auto& tree : trees) {
      for (const Edge& e : tree) {
        if (e.level == level) step.moves.push_back({e.child, e.parent, half, Work::kReduce});
      }
    }
    if (!step.moves.empty()) s.steps.push_back(step);
  }
  for (int level = 1; level <= depth; ++level) {  // down: the root's children first
    ScheduleStep step{"down the trees", {}};
    for (const auto& tree : trees) {
      for (const Edge& e : tree) {
        if (e.level == level) step.moves.push_back({e.parent, e.child, half, Work::kCopy});
      }
    }
    if (!step.moves.empty()) s.steps.push_back(step);
  }
  return s;
}

Schedule nvls_schedule(int ranks, double bytes) {
  Schedule s = empty_schedule(ranks, bytes);
  if (ranks == 1) return s;
  const double slice = bytes / ranks;
  ScheduleStep reduce{"reduce in the switch", {}}, multicast{"multicast from the switch", {}};
  for (int r = 0; r < ranks; ++r) {
    // Rank r loads slice r reduced over every rank: each rank's slice r goes up to the switch,
    // and one reduced slice comes down to r.
    for (int j = 0; j < ranks; ++j) reduce.moves.push_back({j, kSwitch, slice, Work::kRead, r});
    reduce.moves.push_back({kSwitch, r, slice, Work::kWrite, r});
    // Rank r stores its reduced slice once; the switch writes it to every rank.
    multicast.moves.push_back({r, kSwitch, slice, Work::kRead, r});
    for (int j = 0; j < ranks; ++j) multicast.moves.push_back({kSwitch, j, slice, Work::kWrite, r});
  }
  s.steps = {reduce, multicast};
  return s;
}

double busbw_factor(int ranks) { return ranks > 1 ? 2.0 * (ranks - 1) / ranks : 1.0; }

}  // namespace mirrorlab::timing
