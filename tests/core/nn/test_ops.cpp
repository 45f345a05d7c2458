// CpuOps: the kernel agreement suite (ops_agreement.cpp) on the CPU, where it always runs. CpuOps
// runs the reference kernels themselves, except gemm, which goes through OpenBLAS when the build
// has it; so these tests check the interface's plumbing (every argument reaches its kernel) and
// the BLAS path, and they check the harness that test_ops_cuda runs on a GPU.
#include "core/nn/cpu/kernels_cpu.h"
#include "tests/support/ops_agreement.h"

namespace mirrorlab::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Cpu, OpsAgreement, ::testing::Values("cpu"));

TEST(CpuOps, IsHostMemoryAndTimesMarksAtOnce) {
  core::Ops& ops = core::cpu_ops();
  EXPECT_TRUE(ops.host_accessible());
  EXPECT_FALSE(ops.marks_deferred());
  const auto before = vgpu::Clock::now();
  const core::TimeMark mark = ops.mark();
  EXPECT_EQ(mark.event, -1);
  EXPECT_LE(before, ops.time_of(mark));
}

// The harness must be able to fail: a result off by more than 1e-4 relative is reported.
TEST(OpsAgreementHarness, ReportsAWrongResultAndAcceptsRounding) {
  EXPECT_FALSE(agree({1.0f, 2.001f, 3.0f}, {1.0f, 2.0f, 3.0f}));
  EXPECT_FALSE(agree({1.0f, 2.0f}, {1.0f, 2.0f, 3.0f}));
  EXPECT_FALSE(agree({1e-6f}, {0.0f}));  // no magnitude given: zero must stay exactly zero
  EXPECT_TRUE(agree({1e-6f}, {0.0f}, {0.1f}));
  EXPECT_TRUE(agree({1.0f, 2.0001f, 3.0f}, {1.0f, 2.0f, 3.0f}));
}

}  // namespace
}  // namespace mirrorlab::testing
