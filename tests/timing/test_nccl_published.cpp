// The timing model's NCCL predictions against published nccl-tests results for each preset's
// class of machine (docs/nccl-tests-published.csv, each row with its source): within 25%, or,
// where the row says why the model differs, outside 25%, so that what it says stays true.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/csv_cells.h"
#include "timing/nccl_model.h"
#include "timing/topology_file.h"

namespace mirrorlab::timing {
namespace {

// NCCL's bus bandwidth for `algorithm` (Simple protocol) at 4 GiB per rank, GB/s: algbw x 2(n-1)/n,
// as nccl-tests computes it for an all-reduce.
double model_busbw(const Topology& t, int ranks, const std::string& algorithm) {
  const double bytes = 4.0 * 1024 * 1024 * 1024;
  const int nodes = (ranks + t.gpus_per_node - 1) / t.gpus_per_node;
  for (const NcclCost& c : nccl_costs(t.nccl, ranks, nodes, bytes)) {
    if (c.protocol == NcclProtocol::kSimple && algorithm == to_string(c.algorithm)) {
      const double algbw = bytes / (c.time_us * 1e-6) / 1e9;
      return algbw * 2.0 * (ranks - 1) / ranks;
    }
  }
  return 0;  // the model would not run it there
}

TEST(NcclPublished, EachPublishedResultIsWithinAQuarterOrSaysWhyNot) {
  std::ifstream in(std::string(MIRRORLAB_SOURCE_DIR) + "/docs/nccl-tests-published.csv");
  ASSERT_TRUE(in);
  std::string line;
  bool header = true;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> c = testing::csv_cells(line);
    ASSERT_EQ(c.size(), 8u) << line;
    if (header) {
      header = false;
      EXPECT_EQ(c[0], "topology");
      continue;
    }
    ++rows;
    const Topology t = find_topology(c[0]);
    ASSERT_TRUE(t.has_nccl) << c[0];
    EXPECT_FALSE(c[6].empty()) << "a row without its source: " << line;
    const int ranks = std::stoi(c[1]);
    const double published = std::stod(c[3]);
    const double predicted = model_busbw(t, ranks, c[2]);
    ASSERT_GT(predicted, 0) << "the model does not run " << c[2] << " there: " << line;
    const double error = predicted / published - 1;
    SCOPED_TRACE(c[0] + ", " + c[1] + " GPUs, " + c[2] + ": predicted " +
                 std::to_string(predicted) + " GB/s, published " + c[3] + " (" + c[6] + ")");
    if (c[7].empty()) {
      EXPECT_LE(std::abs(error), 0.25);
    } else {
      EXPECT_GT(std::abs(error), 0.25) << "the row says the model differs (" << c[7]
                                       << "), but it is within a quarter: take that away";
    }
  }
  EXPECT_GE(rows, 5);
}

}  // namespace
}  // namespace mirrorlab::timing
