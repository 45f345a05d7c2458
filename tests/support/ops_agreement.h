// Kernel agreement: every Ops kernel, run on an Ops' own device with inputs copied there, against
// the plain CPU reference (kernels_cpu.h) on the same inputs. The TEST_Ps are in
// ops_agreement.cpp; test_ops.cpp instantiates them for CpuOps, test_ops_cuda.cpp for CudaOps.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/nn/ops.h"
#include "virtualgpu/memory/memory_arena.h"

namespace mirrorlab::testing {

// The device under test: its kernels and its memory. "cpu": CpuOps on host memory; "cuda": CudaOps
// on GPU 0 with cudaMalloc memory and a stream of its own (skips when no GPU is visible).
struct OpsTarget {
  virtual ~OpsTarget() = default;
  core::Ops* ops = nullptr;
  vgpu::MemoryArena* arena = nullptr;
};
// nullptr with a reason in *why when the target cannot run here.
std::unique_ptr<OpsTarget> make_ops_target(const std::string& name, std::string* why);

// A float buffer in the target's memory.
class DeviceFloats {
 public:
  DeviceFloats(OpsTarget& target, std::span<const float> host, const char* what = "test buffer");
  float* data() { return alloc_.as<float>(); }
  std::size_t size() const { return size_; }
  std::vector<float> to_host() const;

 private:
  core::Ops* ops_;
  vgpu::Allocation alloc_;
  std::size_t size_;
};

// |got - want| <= 1e-4 * (|want| + magnitude) for every element; magnitude (may be empty: zeros)
// is the size of the terms that were summed. Names the first element that differs.
::testing::AssertionResult agree(const std::vector<float>& got, const std::vector<float>& want,
                                 const std::vector<float>& magnitude = {});

class OpsAgreement : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  core::Ops& ops() { return *target_->ops; }
  vgpu::MemoryArena& arena() { return *target_->arena; }
  DeviceFloats upload(std::span<const float> host) { return DeviceFloats(*target_, host); }
  std::unique_ptr<OpsTarget> target_;
};

}  // namespace mirrorlab::testing
