// Green contexts (virtualgpu/cuda/green/green_contexts.h) on any machine, against a fake driver
// that records every call and keeps the driver's rules: a stream made only in a live context, every
// stream destroyed before its context, everything made destroyed once. What is left to a GPU is
// each GreenDriver method's driver call (cuda_green_context.cpp; scripts/gpu-check runs them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "virtualgpu/cuda/configuration_error.h"
#include "virtualgpu/cuda/cuda_runtime.h"
#include "virtualgpu/cuda/green/green_contexts.h"

namespace mirrorlab::vgpu {
namespace {

class FakeGreenDriver final : public GreenDriver {
 public:
  // An H100's SMs (132; groups of at least 8, in multiples of 8).
  SmResource resource{132, 8, 8};
  bool partitions = true;                // false: sm_resource says there are none
  std::optional<unsigned> driver_makes;  // fewer groups than asked for
  int unsupported_context = -1;          // create_context of this group is not supported
  int failing_stream = -1;               // create_stream of the n-th stream throws a CudaError

  std::vector<std::string> calls, broken;

  void use_primary_context(int ordinal) override {
    calls.push_back("primary gpu" + std::to_string(ordinal));
  }
  bool sm_resource(int ordinal, SmResource* out, std::string* why) override {
    calls.push_back("resource gpu" + std::to_string(ordinal));
    if (!partitions) {
      *why = "this GPU or driver does not support SM partitions";
      return false;
    }
    *out = resource;
    return true;
  }
  Split split(int count, unsigned sms) override {
    calls.push_back("split " + std::to_string(count) + " x " + std::to_string(sms));
    const unsigned made = driver_makes.value_or(static_cast<unsigned>(count));
    groups_ = made;
    return Split{made, sms, resource.sm_count - made * sms};
  }
  Context create_context(int group, std::string* why) override {
    calls.push_back("context " + std::to_string(group));
    if (group >= static_cast<int>(groups_)) broken.push_back("a context of a group never made");
    if (group == unsupported_context) {
      *why = "cuGreenCtxCreate: operation not supported";
      return nullptr;
    }
    Context c = handle(next_++);
    contexts_.insert(c);
    return c;
  }
  Stream create_stream(Context context) override {
    calls.push_back("stream");
    if (!contexts_.count(context)) broken.push_back("a stream in a context not alive");
    if (static_cast<int>(streams_made_++) == failing_stream) {
      throw CudaError(2, "cuGreenCtxStreamCreate failed: out of memory");
    }
    Stream s = handle(next_++);
    stream_context_[s] = context;
    return s;
  }
  void destroy_stream(Stream stream) noexcept override {
    calls.push_back("destroy stream");
    const auto found = stream_context_.find(stream);
    if (found == stream_context_.end()) {
      broken.push_back("destroy of a stream not alive");
      return;
    }
    if (!contexts_.count(found->second)) broken.push_back("a stream destroyed after its context");
    stream_context_.erase(found);
  }
  void destroy_context(Context context) noexcept override {
    calls.push_back("destroy context");
    if (contexts_.erase(context) == 0) broken.push_back("destroy of a context not alive");
    for (const auto& [stream, owner] : stream_context_) {
      if (owner == context) broken.push_back("a context destroyed before its stream");
    }
  }
  std::size_t alive() const { return contexts_.size() + stream_context_.size(); }

 private:
  static void* handle(int id) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(id)); }
  unsigned groups_ = 0, streams_made_ = 0;
  int next_ = 0x100;
  std::set<Context> contexts_;
  std::map<Stream, Context> stream_context_;
};

TEST(GreenContexts, FourLogicalGpusGetAStreamInAContextOfTheirOwnOnAnEqualShare) {
  auto driver = std::make_shared<FakeGreenDriver>();
  std::string unavailable;
  {
    const CudaExecutionSet set = make_green_executions(driver, 0, 4, &unavailable);
    EXPECT_EQ(unavailable, "");
    ASSERT_EQ(set.devices.size(), 4u);
    std::set<void*> streams;
    for (const auto& e : set.devices) {
      EXPECT_EQ(e->sm_count(), 32);
      EXPECT_TRUE(e->own_sms());
      EXPECT_NE(e->stream(), nullptr);
      streams.insert(e->stream());
    }
    EXPECT_EQ(streams.size(), 4u);
    EXPECT_EQ(set.sm_note,
              "SM split: each of the 4 devices has its own 32 of the 132 SMs of GPU:0 (CUDA green "
              "contexts); 4 SMs stay unused");
    EXPECT_EQ(driver->calls,
              (std::vector<std::string>{"primary gpu0", "resource gpu0", "split 4 x 32",
                                        "context 0", "stream", "context 1", "stream", "context 2",
                                        "stream", "context 3", "stream"}));
  }
  EXPECT_EQ(driver->alive(), 0u);  // all destroyed with the set, each stream before its context
  EXPECT_EQ(driver->broken, std::vector<std::string>{});
  EXPECT_EQ(std::count(driver->calls.begin(), driver->calls.end(), "destroy stream"), 4);
}

TEST(GreenContexts, NoPartitionsIsASentenceAndNothingMade) {
  auto driver = std::make_shared<FakeGreenDriver>();
  driver->partitions = false;
  std::string unavailable;
  const CudaExecutionSet set = make_green_executions(driver, 1, 2, &unavailable);
  EXPECT_TRUE(set.devices.empty());
  EXPECT_EQ(unavailable, "this GPU or driver does not support SM partitions");
  EXPECT_EQ(driver->calls, (std::vector<std::string>{"primary gpu1", "resource gpu1"}));
}

TEST(GreenContexts, MoreLogicalGpusThanTheSmsAllowIsAConfigurationErrorBeforeAnySplit) {
  auto driver = std::make_shared<FakeGreenDriver>();
  std::string unavailable;
  try {
    make_green_executions(driver, 0, 20, &unavailable);  // 20 x 8 > 132
    FAIL() << "split 20 ways";
  } catch (const ConfigurationError& e) {
    EXPECT_EQ(e.subject(), ConfigurationSubject::kSmSplit);
    EXPECT_NE(std::string(e.what()).find("SM split: "), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::count(driver->calls.begin(), driver->calls.end(), "split 20 x 8"), 0);
  EXPECT_EQ(driver->alive(), 0u);
}

TEST(GreenContexts, ADriverThatMakesFewerGroupsIsAConfigurationErrorNamingBoth) {
  auto driver = std::make_shared<FakeGreenDriver>();
  driver->driver_makes = 3;
  std::string unavailable;
  try {
    make_green_executions(driver, 0, 4, &unavailable);
    FAIL() << "4 devices from 3 groups";
  } catch (const ConfigurationError& e) {
    EXPECT_EQ(std::string(e.what()),
              "SM split: the driver made only 3 partitions of 32 SMs for 4 logical GPUs");
  }
  EXPECT_EQ(driver->alive(), 0u);
}

TEST(GreenContexts, AContextNotSupportedMidwayDestroysTheOnesMadeAndSaysWhy) {
  auto driver = std::make_shared<FakeGreenDriver>();
  driver->unsupported_context = 2;
  std::string unavailable;
  const CudaExecutionSet set = make_green_executions(driver, 0, 4, &unavailable);
  EXPECT_TRUE(set.devices.empty());
  EXPECT_EQ(unavailable, "cuGreenCtxCreate: operation not supported");
  EXPECT_EQ(driver->alive(), 0u);
  EXPECT_EQ(driver->broken, std::vector<std::string>{});
  EXPECT_EQ(std::count(driver->calls.begin(), driver->calls.end(), "destroy context"), 2);
}

TEST(GreenContexts, AStreamThatCannotBeMadeThrowsAndLeavesNothingAlive) {
  auto driver = std::make_shared<FakeGreenDriver>();
  driver->failing_stream = 1;  // the second
  std::string unavailable;
  EXPECT_THROW(make_green_executions(driver, 0, 4, &unavailable), CudaError);
  EXPECT_EQ(driver->alive(), 0u);  // the first execution, and the second's context
  EXPECT_EQ(driver->broken, std::vector<std::string>{});
  EXPECT_EQ(std::count(driver->calls.begin(), driver->calls.end(), "destroy context"), 2);
}

}  // namespace
}  // namespace mirrorlab::vgpu
