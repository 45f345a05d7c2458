// CudaOps without a GPU: the kernel agreement suite (ops_agreement.cpp) run through CudaOps itself
// over the fake CUDA runtime (fake_cuda_api.h) and the fake model kernels and cuBLAS
// (fake_gpu_model_api.h). The fakes compute as the CPU references and cuBLAS define, so what is
// checked here is CudaOps' own code: the row-major products put to cuBLAS's column-major ones, the
// vector of ones and the scratch that only grow, the loss sums read back through pinned memory
// once their event is reached, the phase marks' events, every pointer inside live memory of the
// device's GPU, every stream and handle live, and nothing left alive when it goes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/nn/cuda/ops_cuda.h"
#include "core/nn/loss.h"
#include "tests/support/cuda/fake_cuda_api.h"
#include "tests/support/cuda/fake_gpu_model_api.h"
#include "tests/support/ops_agreement.h"

namespace mirrorlab::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(FakeCuda, OpsAgreement, ::testing::Values("fake-cuda"));

struct Rig {
  FakeCudaApi api;
  FakeGpuModelApi model{api};
  FakeCudaDevices devices{api, {0}};
  vgpu::Device& device() { return *devices.devices()[0]; }
  std::unique_ptr<core::Ops> make() {
    return core::make_cuda_ops(api, model, device().cuda_ordinal(), device().cuda_stream(),
                               device().memory());
  }
  // Alive now but not a block of the arena's: streams, events, pinned memory, cuBLAS handles.
  std::vector<std::string> alive() const {
    std::vector<std::string> out = model.leaks();
    const std::vector<std::string> handles = api.live_handles();
    out.insert(out.end(), handles.begin(), handles.end());
    return out;
  }
  // A loss call's logits and labels, copied into the device's memory by `ops`.
  struct LossInputs {
    vgpu::Allocation logits, labels;
  };
  LossInputs upload(core::Ops& ops, const std::vector<float>& logits,
                    const std::vector<std::uint8_t>& labels) {
    LossInputs in{device().memory().allocate(logits.size() * sizeof(float), "logits"),
                  device().memory().allocate(labels.size(), "labels")};
    ops.copy_to_device(in.logits.data(), logits.data(), logits.size() * sizeof(float));
    ops.copy_to_device(in.labels.data(), labels.data(), labels.size());
    return in;
  }
  // Neither fake saw memory, a stream, an event or a handle used that was not alive.
  void expect_no_violations() const {
    EXPECT_TRUE(api.violations().empty()) << ::testing::PrintToString(api.violations());
    EXPECT_TRUE(model.violations().empty()) << ::testing::PrintToString(model.violations());
  }
};

// A constructor that fails part way (each of its calls in turn) leaves nothing it made alive.
TEST(CudaOpsOnFakes, AConstructorThatFailsLeavesNothingAlive) {
  for (const std::string call : {"create_blas", "allocate_pinned", "create_event"}) {
    SCOPED_TRACE(call);
    Rig rig;
    const std::vector<std::string> before = rig.alive();
    if (call == "create_blas") {
      rig.model.fail_next(call);
    } else {
      rig.api.fail_next(call);
    }
    EXPECT_THROW(rig.make(), vgpu::CudaError);
    EXPECT_EQ(rig.alive(), before);
    rig.expect_no_violations();
  }
}

// The loss's sums reach the host through pinned memory, copied on the device's stream; the host
// reads them only after waiting for the event recorded behind the copy.
TEST(CudaOpsOnFakes, TheLossSumsAreReadOnlyAfterTheirEventIsReached) {
  Rig rig;
  auto ops = rig.make();
  const int batch = 3, classes = 4;
  const std::vector<float> logits{0.1f, 2.0f,  -1.0f, 0.5f, 3.0f, 0.0f,
                                  0.2f, -0.4f, 1.0f,  1.0f, 1.0f, 0.9f};
  const std::vector<std::uint8_t> labels{1, 0, 3};
  Rig::LossInputs in = rig.upload(*ops, logits, labels);
  core::LossStats got, want;
  const int events_waited = rig.api.count("synchronize_event");
  ops->softmax_cross_entropy(in.logits.as<float>(), in.labels.as<std::uint8_t>(), batch, classes,
                             1.0f, nullptr, &got);
  EXPECT_EQ(rig.api.count("synchronize_event"), events_waited) << "the host waited at once";
  ops->wait_loss_stats();
  EXPECT_EQ(rig.api.count("synchronize_event"), events_waited + 1);
  core::cpu_ops().softmax_cross_entropy(logits.data(), labels.data(), batch, classes, 1.0f, nullptr,
                                        &want);
  EXPECT_EQ(got.loss_sum, want.loss_sum);
  EXPECT_EQ(got.correct, want.correct);
  EXPECT_EQ(got.correct_top5, want.correct_top5);
  EXPECT_EQ(got.count, batch);
  // The order on the stream: the kernel, then the copy into pinned memory, then the event.
  const std::vector<std::string> calls = rig.api.calls();
  const auto copy = std::find_if(calls.rbegin(), calls.rend(), [](const std::string& c) {
    return c.rfind("copy_async " + std::to_string(sizeof(core::elements::LossSums)), 0) == 0;
  });
  ASSERT_NE(copy, calls.rend());
  const auto record = std::find_if(calls.rbegin(), calls.rend(), [](const std::string& c) {
    return c.rfind("record_event", 0) == 0;
  });
  EXPECT_LT(record - calls.rbegin(), copy - calls.rbegin())
      << "the event is recorded after the copy";
  in.logits.reset();
  in.labels.reset();
  ops.reset();
  rig.expect_no_violations();
}

// A wait that fails (a CUDA error reported at the event) forgets what it was to fill: the caller
// has the error, and its LossStats, or first_nonfinite's own answer on a stack gone since, is
// never written by a later wait. One search for a NaN is then served as if nothing had failed.
TEST(CudaOpsOnFakes, AWaitThatFailsFillsNothingLater) {
  Rig rig;
  auto ops = rig.make();
  const std::vector<float> logits{0.1f, 2.0f, -1.0f, 0.5f, 3.0f, 0.0f};
  const std::vector<std::uint8_t> labels{1, 0};
  Rig::LossInputs in = rig.upload(*ops, logits, labels);
  core::LossStats stats;
  stats.count = -1;
  ops->softmax_cross_entropy(in.logits.as<float>(), in.labels.as<std::uint8_t>(), 2, 3, 1.0f,
                             nullptr, &stats);
  rig.api.fail_next("synchronize_event");
  EXPECT_THROW(ops->wait_loss_stats(), vgpu::CudaError);
  ops->wait_loss_stats();
  EXPECT_EQ(stats.count, -1) << "a later wait filled the stats of the step that failed";

  rig.api.fail_next("synchronize_event");
  EXPECT_THROW(ops->first_nonfinite(in.logits.as<float>(), logits.size()), vgpu::CudaError);
  const int waits = rig.api.count("synchronize_event");
  ops->wait_loss_stats();
  EXPECT_EQ(rig.api.count("synchronize_event"), waits) << "a failed search was still pending";
  EXPECT_EQ(ops->first_nonfinite(in.logits.as<float>(), logits.size()), logits.size());
  in.logits.reset();
  in.labels.reset();
  ops.reset();
  rig.expect_no_violations();
}

// The fake itself: a product on memory the GPU does not own, or with a handle already destroyed,
// is reported (so the suite above could see CudaOps do either).
TEST(FakeGpuModelApi, ReportsMemoryOutsideLiveBlocksAndDeadHandles) {
  Rig rig;
  vgpu::GpuStream stream = rig.device().cuda_stream();
  rig.api.set_current_gpu(0);
  core::BlasHandle blas = rig.model.create_blas(stream);
  std::vector<float> host(4, 1.0f);
  vgpu::Allocation c = rig.device().memory().allocate(4 * sizeof(float), "c");
  rig.model.sgemm(blas, false, false, 2, 2, 2, 1.0f, host.data(), 2, host.data(), 2, 0.0f,
                  c.as<float>(), 2);
  EXPECT_FALSE(rig.api.violations().empty()) << "host memory passed as the GPU's";
  rig.model.destroy_blas(blas);
  rig.model.sgemv(blas, 2, 2, 1.0f, c.as<float>(), 2, c.as<float>(), 0.0f, c.as<float>());
  EXPECT_FALSE(rig.model.violations().empty()) << "a destroyed handle used";
  rig.model.relu_forward(c.as<float>(), 4, c.as<float>(), nullptr);
  EXPECT_EQ(rig.api.violations().size(), 2u) << ::testing::PrintToString(rig.api.violations());
}

}  // namespace
}  // namespace mirrorlab::testing
