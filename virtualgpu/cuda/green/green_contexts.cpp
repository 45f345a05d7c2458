#include "virtualgpu/cuda/green/green_contexts.h"

#include <utility>

#include "virtualgpu/cuda/configuration_error.h"
#include "virtualgpu/cuda/gpu_configuration.h"

namespace mirrorlab::vgpu {
namespace {

// One logical GPU's green context and the stream in it; destroys the stream first, as the
// driver asks (a green context does not destroy its streams).
class GreenExecution final : public CudaExecution {
 public:
  GreenExecution(std::shared_ptr<GreenDriver> driver, GreenDriver::Context context, int sm_count)
      : driver_(std::move(driver)), context_(context), sm_count_(sm_count) {}
  ~GreenExecution() override {
    if (stream_ != nullptr) driver_->destroy_stream(stream_);
    driver_->destroy_context(context_);
  }
  GreenExecution(const GreenExecution&) = delete;
  GreenExecution& operator=(const GreenExecution&) = delete;

  void make_stream() { stream_ = driver_->create_stream(context_); }
  void* stream() const override { return stream_; }
  int sm_count() const override { return sm_count_; }
  bool own_sms() const override { return true; }

 private:
  std::shared_ptr<GreenDriver> driver_;
  GreenDriver::Context context_;
  GreenDriver::Stream stream_ = nullptr;
  int sm_count_;
};

}  // namespace

CudaExecutionSet make_green_executions(std::shared_ptr<GreenDriver> driver, int ordinal, int count,
                                       std::string* unavailable) {
  driver->use_primary_context(ordinal);
  GreenDriver::SmResource whole;
  if (!driver->sm_resource(ordinal, &whole, unavailable)) return {};

  const SmSplitPlan plan =
      plan_sm_split(whole.sm_count, whole.min_partition, whole.alignment, count);
  if (!plan.problem.empty()) {
    throw ConfigurationError("SM split: " + plan.problem, ConfigurationSubject::kSmSplit);
  }
  const GreenDriver::Split split = driver->split(count, plan.sms_per_device);
  if (split.made < static_cast<unsigned>(count)) {
    throw ConfigurationError("SM split: the driver made only " + std::to_string(split.made) +
                                 " partitions of " + std::to_string(plan.sms_per_device) +
                                 " SMs for " + std::to_string(count) + " logical GPUs",
                             ConfigurationSubject::kSmSplit);
  }

  CudaExecutionSet set;
  for (int group = 0; group < count; ++group) {
    std::string why;
    GreenDriver::Context context = driver->create_context(group, &why);
    if (context == nullptr) {
      *unavailable = why;
      return {};  // the ones already made are destroyed with `set`
    }
    auto execution =
        std::make_unique<GreenExecution>(driver, context, static_cast<int>(split.sms_per_group));
    execution->make_stream();  // if it throws, `execution` destroys its context, `set` the rest
    set.devices.push_back(std::move(execution));
  }
  set.sm_note =
      "SM split: each of the " + std::to_string(count) + " devices has its own " +
      std::to_string(split.sms_per_group) + " of the " + std::to_string(whole.sm_count) +
      " SMs of GPU:" + std::to_string(ordinal) + " (CUDA green contexts)" +
      (split.left > 0 ? "; " + std::to_string(split.left) + " SMs stay unused" : std::string());
  return set;
}

}  // namespace mirrorlab::vgpu
