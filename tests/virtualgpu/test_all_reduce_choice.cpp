// The all-reduce a MirroredStrategy picks, and what it logs, for every placement of replicas
// (CPU-backed virtual GPUs, logical GPUs sharing a card, one physical GPU per replica) and
// every NCCL (none, before 2.30, 2.30+): a pure function, so no GPU is needed.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "virtualgpu/collectives/all_reduce_algorithms.h"
#include "virtualgpu/collectives/all_reduce_choice.h"
#include "virtualgpu/collectives/collective.h"
#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"
#include "virtualgpu/devices/device_registry.h"

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

// What TensorFlow 2.21 chose, run by scripts/check-tensorflow: CollectiveAllReduce with RING on
// CPU devices (run for real) and on logical GPUs (its selection code run with the device lists of
// one card carved in two), NCCL with one physical GPU per replica. It logs no warning.
const char* kOlderTensorFlow = "Older TensorFlow, as in the Colab note, reduced to one device";

TEST(AllReduceChoice, AutoOnCpuBackedVirtualGpusIsTensorFlowsRing) {
  for (const NcclRuntime& nccl : {kNoNccl, kNccl228, kNccl230}) {
    const AllReduceChoice c = choose_all_reduce("auto", cpu(2), nccl);
    EXPECT_EQ(c.algorithm, "ring");
    ASSERT_EQ(c.notes.size(), 2u);
    EXPECT_EQ(c.notes[0],
              "All-reduce: ring (reduce-scatter then all-gather, 2 steps per all-reduce)");
    EXPECT_NE(c.notes[1].find("as TensorFlow 2.21 chooses on CPU devices (CollectiveAllReduce, "
                              "implementation RING)"),
              std::string::npos)
        << c.notes[1];
    EXPECT_NE(c.notes[1].find(kOlderTensorFlow), std::string::npos) << c.notes[1];
    EXPECT_NE(c.notes[1].find("ask for reduce-to-one"), std::string::npos) << c.notes[1];
    EXPECT_FALSE(c.nccl_multi_rank);
    EXPECT_EQ(c.row->tensorflow_log(cpu(2), 6, 1),
              "Collective all_reduce tensors: 6 all_reduces, num_devices = 2, group_size = 2, "
              "implementation = CommunicationImplementation.RING, num_packs = 1");
  }
}

TEST(AllReduceChoice, AutoOnLogicalGpusSharingACardIsTheRingToo) {
  for (int n = 2; n <= 4; ++n) {
    const AllReduceChoice c = choose_all_reduce(
        "auto", cuda(std::vector<int>(n, 0), DeviceKind::kCudaLogicalGpu), kNccl228);
    EXPECT_EQ(c.algorithm, "ring") << n;
    ASSERT_EQ(c.notes.size(), 2u);  // no mention of a multi-rank mode 2.28 does not have
    EXPECT_NE(c.notes[1].find("on logical GPUs sharing a card"), std::string::npos) << c.notes[1];
  }
  // Two logical GPUs on each of two cards: still shared.
  EXPECT_EQ(choose_all_reduce("auto", cuda({0, 0, 1, 1}, DeviceKind::kCudaLogicalGpu), kNccl228)
                .algorithm,
            "ring");
}

TEST(AllReduceChoice, AutoOnTwoLogicalGpusWithNccl230OffersTheExperimentalModeButDoesNotPickIt) {
  const AllReduceChoice c =
      choose_all_reduce("auto", cuda({0, 0}, DeviceKind::kCudaLogicalGpu), kNccl230);
  EXPECT_EQ(c.algorithm, "ring");
  ASSERT_EQ(c.notes.size(), 3u);
  EXPECT_NE(c.notes[2].find("EXPERIMENTAL"), std::string::npos) << c.notes[2];
  EXPECT_NE(c.notes[2].find("ask for nccl"), std::string::npos) << c.notes[2];
  // Three on a card: beyond the mode's two ranks per GPU, so not offered.
  EXPECT_EQ(choose_all_reduce("auto", cuda({0, 0, 0}, DeviceKind::kCudaLogicalGpu), kNccl230)
                .notes.size(),
            2u);
}

TEST(AllReduceChoice, AutoOnOnePhysicalGpuPerReplicaPicksNcclAndSaysNoMore) {
  for (const auto& ordinals : {std::vector<int>{0}, {0, 1}, {3, 1, 0, 2}}) {
    const auto replicas = cuda(ordinals, DeviceKind::kCudaPhysicalGpu);
    const AllReduceChoice c = choose_all_reduce("auto", replicas, kNccl228);
    EXPECT_EQ(c.algorithm, "nccl");
    ASSERT_EQ(c.notes.size(), 1u);
    EXPECT_NE(c.notes[0].find("NCCL 2.28.9"), std::string::npos) << c.notes[0];
    EXPECT_EQ(c.notes[0].find("EXPERIMENTAL"), std::string::npos) << c.notes[0];
    const std::string n = std::to_string(ordinals.size());
    EXPECT_EQ(c.row->tensorflow_log(replicas, 6, 1),
              "Collective all_reduce tensors: 6 all_reduces, num_devices = " + n +
                  ", group_size = " + n +
                  ", implementation = CommunicationImplementation.NCCL, num_packs = 1");
  }
  // One logical GPU per card is a card of its own.
  EXPECT_EQ(
      choose_all_reduce("auto", cuda({0, 1}, DeviceKind::kCudaLogicalGpu), kNccl228).algorithm,
      "nccl");
}

TEST(AllReduceChoice, AutoOnPhysicalGpusWithoutNcclSaysSoAndRunsTheRing) {
  const AllReduceChoice c =
      choose_all_reduce("auto", cuda({0, 1}, DeviceKind::kCudaPhysicalGpu), kNoNccl);
  EXPECT_EQ(c.algorithm, "ring");
  ASSERT_EQ(c.notes.size(), 2u);
  EXPECT_NE(c.notes[1].find("this build has no NCCL, which TensorFlow would use here"),
            std::string::npos)
      << c.notes[1];
}

TEST(AllReduceChoice, ReduceToOneLogsWhatTensorFlowsReductionToOneDeviceLogs) {
  const AllReduceChoice c = choose_all_reduce("reduce-to-one", cpu(3), kNccl228);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_EQ(c.notes[0],
            "All-reduce: reduce-to-one (every replica's gradients added into /gpu:0, then the sum "
            "copied back to every replica: 2 steps)");
  EXPECT_EQ(c.row->tensorflow_log(cpu(3), 6, 1),
            "Reduce to /job:localhost/replica:0/task:0/device:GPU:0 then broadcast to "
            "('/job:localhost/replica:0/task:0/device:GPU:0', "
            "'/job:localhost/replica:0/task:0/device:GPU:1', "
            "'/job:localhost/replica:0/task:0/device:GPU:2').");
  // TensorFlow has no one-shot, so it logs nothing for it.
  EXPECT_EQ(choose_all_reduce("one-shot", cpu(3), kNccl228).row->tensorflow_log(cpu(3), 6, 1), "");
}

TEST(AllReduceChoice, NcclOnSeparateGpusIsGranted) {
  const AllReduceChoice c =
      choose_all_reduce("nccl", cuda({0, 1}, DeviceKind::kCudaPhysicalGpu), kNccl228);
  EXPECT_EQ(c.algorithm, "nccl");
  EXPECT_FALSE(c.nccl_multi_rank);
  EXPECT_EQ(c.notes.size(), 1u);
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

// Each refusal's advice is names, said in each face's words: the command line's --allreduce
// values (what()), or another's (Python's classes) from the same refusal, never by rewriting the
// command line's sentence.
TEST(AllReduceChoice, EachRefusalSaysWhatCanRunInEachFacesWords) {
  AllReduceWords classes;
  classes.verb = "give";
  classes.name = [](std::string_view a) { return "<" + std::string(a) + ">"; };
  classes.the = classes.name;
  classes.auto_alone = " (its choice)";
  struct Case {
    std::vector<ReplicaPlacement> replicas;
    NcclRuntime nccl;
    std::string command_line, other;  // how the advice ends in each
  };
  for (const Case& c : std::vector<Case>{
           {cpu(2), kNccl228, "virtual GPUs: use auto, reduce-to-one, ring or one-shot",
            "virtual GPUs: give <auto> (its choice), <reduce-to-one>, <ring> or <one-shot>"},
           {cuda({0}, DeviceKind::kCudaPhysicalGpu), kNoNccl,
            "CUDA toolkit); use auto, reduce-to-one, ring or one-shot",
            "CUDA toolkit); give <auto> (its choice), <reduce-to-one>, <ring> or <one-shot>"},
           {cuda({0, 0}, DeviceKind::kCudaLogicalGpu), kNccl228,
            "per GPU. Use auto (the ring, as TensorFlow chooses there) or one-shot for logical "
            "GPUs that share a card",
            "per GPU. Give <auto> (<ring>, as TensorFlow chooses there) or <one-shot> for "
            "logical GPUs that share a card"},
           {cuda({0, 0, 0}, DeviceKind::kCudaLogicalGpu), kNccl230,
            "per GPU. Use auto, one-shot or ring, or at most 2 logical GPUs per card",
            "per GPU. Give <auto> (its choice), <one-shot> or <ring>, or at most 2 logical GPUs "
            "per card"}}) {
    try {
      choose_all_reduce("nccl", c.replicas, c.nccl);
      ADD_FAILURE() << "granted: " << c.command_line;
    } catch (const AllReduceUnavailable& e) {
      const std::string said = e.what(), other = refusal_text(e.refusal(), classes);
      EXPECT_TRUE(said.ends_with(c.command_line)) << said;
      EXPECT_TRUE(other.ends_with(c.other)) << other;
      EXPECT_EQ(said.substr(0, e.refusal().reason.size()),
                other.substr(0, e.refusal().reason.size()));
    }
  }
}

TEST(AllReduceChoice, NcclOnTwoLogicalGpusWithNccl230IsTheLabelledExperimentalMode) {
  const AllReduceChoice c =
      choose_all_reduce("nccl", cuda({0, 0}, DeviceKind::kCudaLogicalGpu), kNccl230);
  EXPECT_EQ(c.algorithm, "nccl");
  EXPECT_TRUE(c.nccl_multi_rank);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("EXPERIMENTAL: NCCL_MULTI_RANK_GPU_ENABLE=1"), std::string::npos)
      << c.notes[0];
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
      ASSERT_EQ(c.notes.size(), 1u);
    }
  }
  EXPECT_NE(choose_all_reduce("ring", cpu(4), kNoNccl).notes[0].find("6 steps"), std::string::npos);
  EXPECT_NE(
      refusal("tree", cpu(2), kNccl228).find("choose auto, reduce-to-one, ring, one-shot or nccl"),
      std::string::npos);
  EXPECT_THROW(choose_all_reduce("auto", {}, kNccl228), std::invalid_argument);
}

TEST(AllReduceChoice, DeviceNamesAndTuplesAreTensorFlows) {
  EXPECT_EQ(device_tuple({"/gpu:0"}), "('/gpu:0',)");
  EXPECT_EQ(device_tuple({"/gpu:0", "/gpu:1"}), "('/gpu:0', '/gpu:1')");
  // As TensorFlow 2.21 logged MirroredStrategy(["/gpu:0", "/gpu:1"]) and its CPU devices.
  EXPECT_EQ(tensorflow_device_name("/gpu:1"), "/job:localhost/replica:0/task:0/device:GPU:1");
  EXPECT_EQ(tensorflow_device_name("/cpu:0"), "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(tensorflow_device_name("/gpu:12"), "/job:localhost/replica:0/task:0/device:GPU:12");
  EXPECT_EQ(tensorflow_device_name("odd"), "odd");
  EXPECT_EQ(tensorflow_device_name(""), "");
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
