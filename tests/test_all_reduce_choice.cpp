// The all-reduce a MirroredStrategy picks, and what it logs, for every placement of replicas
// (CPU-backed virtual GPUs, logical GPUs sharing a card, one physical GPU per replica) and
// every NCCL (none, before 2.30, 2.30+): a pure function, so no GPU is needed.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "virtualgpu/all_reduce_choice.h"
#include "virtualgpu/all_reduce_algorithms.h"
#include "virtualgpu/nccl_all_reduce.h"
#include "virtualgpu/collective.h"
#include "virtualgpu/device_registry.h"

namespace mirrorlab::vgpu {
namespace {

constexpr NcclRuntime kNoNccl{};
constexpr NcclRuntime kNccl228{true, 22809};
constexpr NcclRuntime kNccl230{true, 23000};

std::vector<ReplicaPlacement> cpu(int n) {
  std::vector<ReplicaPlacement> r;
  for (int i = 0; i < n; ++i)
    r.push_back({"/gpu:" + std::to_string(i), DeviceKind::kCpuVirtualGpu, -1});
  return r;
}
// Replica i on physical GPU ordinals[i]; logical GPUs when a card is shared.
std::vector<ReplicaPlacement> cuda(std::vector<int> ordinals, DeviceKind kind) {
  std::vector<ReplicaPlacement> r;
  for (std::size_t i = 0; i < ordinals.size(); ++i) {
    r.push_back({"/gpu:" + std::to_string(i), kind, ordinals[i]});
  }
  return r;
}

std::string refusal(std::string_view requested, const std::vector<ReplicaPlacement>& replicas,
                    const NcclRuntime& nccl) {
  try {
    choose_all_reduce(requested, replicas, nccl);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(AllReduceChoice, AutoOnCpuBackedVirtualGpusFallsBackInTensorFlowsWords) {
  for (const NcclRuntime& nccl : {kNoNccl, kNccl228, kNccl230}) {
    const AllReduceChoice c = choose_all_reduce("auto", cpu(2), nccl);
    EXPECT_EQ(c.algorithm, "reduce-to-one");
    ASSERT_EQ(c.warnings.size(), 1u);
    EXPECT_EQ(c.warnings[0],
              "NCCL is not supported when using virtual GPUs, falling back to reduction to one "
              "device");
    ASSERT_EQ(c.info.size(), 1u);
    EXPECT_EQ(c.info[0], "Reduce to /gpu:0 then broadcast to ('/gpu:0', '/gpu:1').");
    EXPECT_FALSE(c.nccl_multi_rank);
  }
}

TEST(AllReduceChoice, AutoOnLogicalGpusSharingACardFallsBackToo) {
  for (int n = 2; n <= 4; ++n) {
    const AllReduceChoice c = choose_all_reduce(
        "auto", cuda(std::vector<int>(n, 0), DeviceKind::kCudaLogicalGpu), kNccl228);
    EXPECT_EQ(c.algorithm, "reduce-to-one") << n;
    ASSERT_EQ(c.warnings.size(), 1u);
    EXPECT_NE(c.warnings[0].find("NCCL is not supported when using virtual GPUs"),
              std::string::npos);
    ASSERT_EQ(c.info.size(), 1u);  // no mention of a multi-rank mode 2.28 does not have
  }
  // Two logical GPUs on each of two cards: still shared.
  EXPECT_EQ(choose_all_reduce("auto", cuda({0, 0, 1, 1}, DeviceKind::kCudaLogicalGpu), kNccl228)
                .algorithm,
            "reduce-to-one");
  const AllReduceChoice c =
      choose_all_reduce("auto", cuda({0, 0, 0}, DeviceKind::kCudaLogicalGpu), kNccl228);
  EXPECT_EQ(c.info.back(), "Reduce to /gpu:0 then broadcast to ('/gpu:0', '/gpu:1', '/gpu:2').");
}

TEST(AllReduceChoice, AutoOnTwoLogicalGpusWithNccl230OffersTheExperimentalModeButDoesNotPickIt) {
  const AllReduceChoice c =
      choose_all_reduce("auto", cuda({0, 0}, DeviceKind::kCudaLogicalGpu), kNccl230);
  EXPECT_EQ(c.algorithm, "reduce-to-one");
  ASSERT_EQ(c.info.size(), 2u);
  EXPECT_NE(c.info[0].find("EXPERIMENTAL"), std::string::npos) << c.info[0];
  EXPECT_NE(c.info[0].find("ask for nccl"), std::string::npos) << c.info[0];
  // Three on a card: beyond the mode's two ranks per GPU, so not offered.
  EXPECT_EQ(
      choose_all_reduce("auto", cuda({0, 0, 0}, DeviceKind::kCudaLogicalGpu), kNccl230).info.size(),
      1u);
}

TEST(AllReduceChoice, AutoOnOnePhysicalGpuPerReplicaPicksNccl) {
  for (const auto& ordinals : {std::vector<int>{0}, {0, 1}, {3, 1, 0, 2}}) {
    const AllReduceChoice c =
        choose_all_reduce("auto", cuda(ordinals, DeviceKind::kCudaPhysicalGpu), kNccl228);
    EXPECT_EQ(c.algorithm, "nccl");
    EXPECT_TRUE(c.warnings.empty());
    ASSERT_EQ(c.info.size(), 1u);
    EXPECT_NE(c.info[0].find("NCCL 2.28.9"), std::string::npos) << c.info[0];
    EXPECT_EQ(c.info[0].find("EXPERIMENTAL"), std::string::npos) << c.info[0];
  }
  // One logical GPU per card is a card of its own.
  EXPECT_EQ(
      choose_all_reduce("auto", cuda({0, 1}, DeviceKind::kCudaLogicalGpu), kNccl228).algorithm,
      "nccl");
}

TEST(AllReduceChoice, AutoOnPhysicalGpusWithoutNcclSaysSoAndReducesToOne) {
  const AllReduceChoice c =
      choose_all_reduce("auto", cuda({0, 1}, DeviceKind::kCudaPhysicalGpu), kNoNccl);
  EXPECT_EQ(c.algorithm, "reduce-to-one");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0], "Nccl kernel is not found, not using nccl allreduce.");
}

TEST(AllReduceChoice, NcclOnSeparateGpusIsGranted) {
  const AllReduceChoice c =
      choose_all_reduce("nccl", cuda({0, 1}, DeviceKind::kCudaPhysicalGpu), kNccl228);
  EXPECT_EQ(c.algorithm, "nccl");
  EXPECT_FALSE(c.nccl_multi_rank);
  EXPECT_TRUE(c.warnings.empty());
}

TEST(AllReduceChoice, NcclWhereItCannotRunSaysWhy) {
  EXPECT_NE(refusal("nccl", cuda({0}, DeviceKind::kCudaPhysicalGpu), kNoNccl)
                .find("this build has no NCCL"),
            std::string::npos);
  EXPECT_NE(refusal("nccl", cpu(2), kNccl228).find("CPU-backed virtual GPUs"), std::string::npos);
  const std::string before_230 =
      refusal("nccl", cuda({0, 0}, DeviceKind::kCudaLogicalGpu), kNccl228);
  EXPECT_NE(before_230.find("Duplicate GPU detected"), std::string::npos) << before_230;
  EXPECT_NE(before_230.find("NCCL 2.28.9"), std::string::npos) << before_230;
  EXPECT_NE(before_230.find("2.30"), std::string::npos) << before_230;
  const std::string three = refusal("nccl", cuda({0, 0, 0}, DeviceKind::kCudaLogicalGpu), kNccl230);
  EXPECT_NE(three.find("at most 2 ranks per GPU"), std::string::npos) << three;
}

TEST(AllReduceChoice, NcclOnTwoLogicalGpusWithNccl230IsTheLabelledExperimentalMode) {
  const AllReduceChoice c =
      choose_all_reduce("nccl", cuda({0, 0}, DeviceKind::kCudaLogicalGpu), kNccl230);
  EXPECT_EQ(c.algorithm, "nccl");
  EXPECT_TRUE(c.nccl_multi_rank);
  ASSERT_EQ(c.info.size(), 1u);
  EXPECT_NE(c.info[0].find("EXPERIMENTAL: NCCL_MULTI_RANK_GPU_ENABLE=1"), std::string::npos)
      << c.info[0];
  // Two per card on two cards is still at most two per GPU.
  EXPECT_TRUE(choose_all_reduce("nccl", cuda({0, 0, 1, 1}, DeviceKind::kCudaLogicalGpu), kNccl230)
                  .nccl_multi_rank);
}

TEST(AllReduceChoice, ExplicitAlgorithmsRunAnywhereAndUnknownOnesAreRefused) {
  for (const char* name : {"reduce-to-one", "ring", "one-shot"}) {
    for (const auto& replicas : {cpu(3), cuda({0, 0, 0}, DeviceKind::kCudaLogicalGpu),
                                 cuda({0, 1, 2}, DeviceKind::kCudaPhysicalGpu)}) {
      const AllReduceChoice c = choose_all_reduce(name, replicas, kNccl228);
      EXPECT_EQ(c.algorithm, name);
      EXPECT_TRUE(c.warnings.empty());
      ASSERT_EQ(c.info.size(), 1u);
    }
  }
  EXPECT_NE(choose_all_reduce("ring", cpu(4), kNoNccl).info[0].find("6 steps"), std::string::npos);
  EXPECT_NE(refusal("tree", cpu(2), kNccl228)
                .find("choose auto, reduce-to-one, ring, one-shot or nccl"),
            std::string::npos);
  EXPECT_THROW(choose_all_reduce("auto", {}, kNccl228), std::invalid_argument);
}

TEST(AllReduceChoice, DeviceTupleIsTensorFlows) {
  EXPECT_EQ(device_tuple({"/gpu:0"}), "('/gpu:0',)");
  EXPECT_EQ(device_tuple({"/gpu:0", "/gpu:1"}), "('/gpu:0', '/gpu:1')");
}

TEST(AllReduceChoice, PlacementsComeFromTheDevices) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 16);
  const auto p = placements_of(registry.logical_devices());
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].name, "/gpu:1");
  EXPECT_EQ(p[1].kind, DeviceKind::kCpuVirtualGpu);
  EXPECT_EQ(p[1].cuda_ordinal, -1);
}

TEST(NcclVersion, TextOfBothEncodingsAndWhatThisBuildHas) {
  EXPECT_EQ(nccl_version_text(22809), "2.28.9");
  EXPECT_EQ(nccl_version_text(23000), "2.30.0");
  EXPECT_EQ(nccl_version_text(2704), "2.7.4");
  EXPECT_EQ(nccl_version_text(0), "none");
  const NcclRuntime runtime = nccl_runtime();  // ncclGetVersion needs no GPU
#if MIRRORLAB_HAVE_NCCL
  EXPECT_TRUE(runtime.built);
  EXPECT_GE(runtime.version_code, 20000) << nccl_version_text(runtime.version_code);
#else
  EXPECT_FALSE(runtime.built);
  EXPECT_EQ(runtime.version_code, 0);
#endif
}

TEST(NcclAllReduce, RefusesCpuBackedDevicesWithASentence) {
  DeviceRegistry registry;
  registry.set_logical_device_configuration(2, 16);
  try {
    make_all_reduce("nccl", registry.logical_devices());
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
#if MIRRORLAB_HAVE_NCCL
    EXPECT_NE(std::string(e.what()).find("CPU-backed virtual GPUs"), std::string::npos) << e.what();
#else
    EXPECT_NE(std::string(e.what()).find("not in this build"), std::string::npos) << e.what();
#endif
  }
}

}  // namespace
}  // namespace mirrorlab::vgpu
