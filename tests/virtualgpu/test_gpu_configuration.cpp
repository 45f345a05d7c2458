// The rules for putting devices on physical GPUs, checked on made-up cards (no GPU needed).
#include <gtest/gtest.h>

#include <string>

#include "virtualgpu/cuda/gpu_configuration.h"

namespace mirrorlab::vgpu {
namespace {

PhysicalGpu h100() {
  PhysicalGpu gpu;
  gpu.ordinal = 0;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.total_bytes = 81559 * kMiB;
  gpu.free_bytes = 81000 * kMiB;
  gpu.sm_count = 132;
  gpu.compute_major = 9;
  return gpu;
}

GpuInventory two_h100s() {
  GpuInventory inventory;
  inventory.cuda_built = true;
  inventory.gpus = {h100(), h100()};
  inventory.gpus[1].ordinal = 1;
  inventory.peer_access = {{false, true}, {true, false}};
  return inventory;
}

TEST(MemoryFit, LimitsThatFitUnderTheFreeMemoryLessTheReserveAreAccepted) {
  const std::size_t free = 10000 * kMiB;
  EXPECT_EQ(memory_fit_problem(h100(), free, {1024 * kMiB, 1024 * kMiB}), "");
  // Exactly up to the reserve: fits; one byte more: does not.
  EXPECT_EQ(memory_fit_problem(h100(), free, {free - kGpuReserveBytes}), "");
  EXPECT_NE(memory_fit_problem(h100(), free, {free - kGpuReserveBytes + 1}), "");
  EXPECT_EQ(memory_fit_problem(h100(), free, {free}, 0), "");
}

TEST(MemoryFit, MoreThanTheCardHasIsASentenceNamingTheCardAndTheFix) {
  const std::string problem =
      memory_fit_problem(h100(), 81000 * kMiB, std::vector<std::size_t>(4, 40000 * kMiB));
  EXPECT_NE(problem.find("160000 MiB"), std::string::npos) << problem;
  EXPECT_NE(problem.find("GPU:0 (NVIDIA H100 80GB HBM3)"), std::string::npos) << problem;
  EXPECT_NE(problem.find("81000 MiB free of 81559 MiB"), std::string::npos) << problem;
  EXPECT_NE(problem.find("at most 80744 MiB can go to the devices"), std::string::npos) << problem;
  // The fix (--memory-limit) is the command line's to say: tests/app/test_advice.cpp.
}

TEST(MemoryFit, SumsThatOverflowAreStillTooMuch) {
  EXPECT_NE(memory_fit_problem(h100(), 81000 * kMiB, {SIZE_MAX, SIZE_MAX}), "");
  EXPECT_NE(memory_fit_problem(h100(), 100, {1}), "") << "less free than the reserve";
}

TEST(SmSplit, EqualSharesRoundedDownToTheAlignment) {
  // Hopper: partitions of at least 8 SMs, in steps of 8.
  EXPECT_EQ(plan_sm_split(132, 8, 8, 2).sms_per_device, 64u);
  EXPECT_EQ(plan_sm_split(132, 8, 8, 4).sms_per_device, 32u);
  EXPECT_EQ(plan_sm_split(132, 8, 8, 16).sms_per_device, 8u);
  EXPECT_EQ(plan_sm_split(132, 8, 8, 1).sms_per_device, 128u);
  // Ampere: at least 4, in steps of 2.
  EXPECT_EQ(plan_sm_split(108, 4, 2, 3).sms_per_device, 36u);
  EXPECT_EQ(plan_sm_split(108, 4, 2, 3).problem, "");
}

TEST(SmSplit, TooManyDevicesForTheSmsIsASentence) {
  const SmSplitPlan plan = plan_sm_split(132, 8, 8, 17);
  EXPECT_EQ(plan.sms_per_device, 0u);
  EXPECT_NE(plan.problem.find("cannot be split 17 ways"), std::string::npos) << plan.problem;
  EXPECT_NE(plan.problem.find("at most 16"), std::string::npos) << plan.problem;
  EXPECT_NE(plan_sm_split(132, 8, 8, 0).problem, "");
  EXPECT_EQ(plan_sm_split(132, 8, 0, 2).sms_per_device, 66u) << "alignment 0 means none";
}

TEST(GpuSelection, EachVisibleGpuOnce) {
  const GpuInventory inventory = two_h100s();
  EXPECT_EQ(gpu_selection_problem({0, 1}, inventory), "");
  EXPECT_EQ(gpu_selection_problem({1}, inventory), "");
  EXPECT_NE(gpu_selection_problem({2}, inventory).find("no GPU:2 (2 GPUs visible, numbered 0 to 1"),
            std::string::npos);
  EXPECT_NE(gpu_selection_problem({-1}, inventory), "");
  EXPECT_NE(gpu_selection_problem({0, 0}, inventory).find("twice"), std::string::npos);
  EXPECT_NE(gpu_selection_problem({}, inventory), "");
}

TEST(GpuSelection, NoGpuVisibleSaysWhy) {
  GpuInventory none;
  none.unavailable_reason = "no CUDA GPU visible (no driver)";
  EXPECT_NE(gpu_selection_problem({0}, none).find("no CUDA GPU visible (no driver)"),
            std::string::npos);
}

TEST(GpuTable, ListsEveryGpuAndThePeerMatrix) {
  const std::string table = format_gpu_table(two_h100s());
  EXPECT_NE(table.find("NVIDIA H100 80GB HBM3        81559      81000   132      9.0"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("Peer access"), std::string::npos) << table;
  EXPECT_NE(table.find("GPU:0       -    yes"), std::string::npos) << table;
  EXPECT_NE(table.find("GPU:1     yes      -"), std::string::npos) << table;
  EXPECT_EQ(format_gpu_table(GpuInventory{}), "");
}

TEST(GpuNames, AsTensorFlowWritesThem) {
  EXPECT_EQ(physical_device_name("GPU", 1), "/physical_device:GPU:1");
  EXPECT_EQ(physical_device_name("CPU", 0), "/physical_device:CPU:0");
  EXPECT_EQ(mib_text(3 * kMiB + 5), "3 MiB");
}

}  // namespace
}  // namespace mirrorlab::vgpu
