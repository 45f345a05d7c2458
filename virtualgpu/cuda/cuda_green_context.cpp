// Green contexts through the driver API, reached at run time with
// cudaGetDriverEntryPointByVersion: the binary never links libcuda, so it still starts on a
// machine without the driver (CI), and a driver older than the API (12.4) is a sentence, not a
// failure to load.
//
// The steps (CUDA's own): the GPU's SM resource (cuDeviceGetDevResource) is split into equal
// groups (cuDevSmResourceSplitByCount); each group becomes a descriptor
// (cuDevResourceGenerateDesc), then a green context (cuGreenCtxCreate) with a non-blocking stream
// (cuGreenCtxStreamCreate). Kernels launched on that stream run on the group's SMs only. Memory
// is the primary context's, so cudaMalloc'd arenas work in every green context of the card.
#include "virtualgpu/cuda/cuda_green_context.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <vector>

#include "virtualgpu/cuda/configuration_error.h"
#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/cuda/gpu_configuration.h"

namespace mirrorlab::vgpu {
namespace {

struct GreenApi {
  PFN_cuGetErrorString_v6000 get_error_string = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetDevResource_v12040 get_resource = nullptr;
  PFN_cuDevSmResourceSplitByCount_v12040 split = nullptr;
  PFN_cuDevResourceGenerateDesc_v12040 generate_desc = nullptr;
  PFN_cuGreenCtxCreate_v12040 create = nullptr;
  PFN_cuGreenCtxDestroy_v12040 destroy = nullptr;
  PFN_cuGreenCtxStreamCreate_v12050 stream_create = nullptr;
  PFN_cuStreamDestroy_v4000 stream_destroy = nullptr;
};

std::string version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// One driver function at the ABI version its PFN type names; false, with the reason, if missing.
template <class Fn>
bool load(const char* symbol, unsigned version, Fn* fn, std::string* why) {
  void* ptr = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t status =
      cudaGetDriverEntryPointByVersion(symbol, &ptr, version, cudaEnableDefault, &found);
  if (status == cudaSuccess && found == cudaDriverEntryPointSuccess && ptr != nullptr) {
    *fn = reinterpret_cast<Fn>(ptr);
    return true;
  }
  if (status != cudaSuccess) (void)cudaGetLastError();
  int driver = 0;
  (void)cudaDriverGetVersion(&driver);
  *why = "green contexts need a CUDA 12.4 driver or newer, and this driver (CUDA " +
         version_text(driver) + ") has no " + symbol +
         (status != cudaSuccess ? " (" + cuda_error_text(status) + ")" : std::string());
  return false;
}

bool load_green_api(GreenApi* api, std::string* why) {
  return load("cuGetErrorString", 6000, &api->get_error_string, why) &&
         load("cuDeviceGet", 2000, &api->device_get, why) &&
         load("cuDeviceGetDevResource", 12040, &api->get_resource, why) &&
         load("cuDevSmResourceSplitByCount", 12040, &api->split, why) &&
         load("cuDevResourceGenerateDesc", 12040, &api->generate_desc, why) &&
         load("cuGreenCtxCreate", 12040, &api->create, why) &&
         load("cuGreenCtxDestroy", 12040, &api->destroy, why) &&
         load("cuGreenCtxStreamCreate", 12050, &api->stream_create, why) &&
         load("cuStreamDestroy", 4000, &api->stream_destroy, why);
}

std::string driver_error_text(const GreenApi& api, CUresult result) {
  const char* text = nullptr;
  if (api.get_error_string(result, &text) != CUDA_SUCCESS || text == nullptr) text = "unknown";
  return std::string(text) + " (CUresult " + std::to_string(static_cast<int>(result)) + ")";
}

void check(const GreenApi& api, CUresult result, const char* call) {
  if (result != CUDA_SUCCESS) {
    throw CudaError(static_cast<int>(result),
                    std::string(call) + " failed: " + driver_error_text(api, result));
  }
}

// One logical GPU's green context and the stream in it; destroys the stream first, as the
// driver asks (a green context does not destroy its streams).
class GreenExecution final : public CudaExecution {
 public:
  GreenExecution(const GreenApi& api, CUgreenCtx context, int sm_count)
      : api_(api), context_(context), sm_count_(sm_count) {}
  ~GreenExecution() override {
    if (stream_ != nullptr) (void)api_.stream_destroy(stream_);
    (void)api_.destroy(context_);
  }
  GreenExecution(const GreenExecution&) = delete;
  GreenExecution& operator=(const GreenExecution&) = delete;

  void make_stream() {
    check(api_, api_.stream_create(&stream_, context_, CU_STREAM_NON_BLOCKING, 0),
          "cuGreenCtxStreamCreate");
  }
  void* stream() const override { return stream_; }  // a CUstream is a cudaStream_t
  int sm_count() const override { return sm_count_; }
  bool own_sms() const override { return true; }

 private:
  GreenApi api_;
  CUgreenCtx context_;
  CUstream stream_ = nullptr;
  int sm_count_;
};

}  // namespace

CudaExecutionSet make_green_executions(int ordinal, int count, std::string* unavailable) {
  GreenApi api;
  if (!load_green_api(&api, unavailable)) return {};
  // Green contexts are made from the primary context: have it alive first (cudaFree(nullptr)
  // creates it), or each creation would set it up and tear it down again.
  CurrentGpuGuard guard(ordinal);
  MIRRORLAB_CUDA_CHECK(cudaFree(nullptr));

  CUdevice device = 0;
  check(api, api.device_get(&device, ordinal), "cuDeviceGet");
  CUdevResource whole{};
  const CUresult got = api.get_resource(device, &whole, CU_DEV_RESOURCE_TYPE_SM);
  if (got == CUDA_ERROR_NOT_SUPPORTED) {
    *unavailable = "this GPU or driver does not support SM partitions (cuDeviceGetDevResource: " +
                   driver_error_text(api, got) + ")";
    return {};
  }
  check(api, got, "cuDeviceGetDevResource");

  const SmSplitPlan plan = plan_sm_split(whole.sm.smCount, whole.sm.minSmPartitionSize,
                                         whole.sm.smCoscheduledAlignment, count);
  if (!plan.problem.empty()) {
    throw ConfigurationError("SM split: " + plan.problem, ConfigurationSubject::kSmSplit);
  }
  std::vector<CUdevResource> groups(static_cast<std::size_t>(count));
  unsigned made = static_cast<unsigned>(count);
  CUdevResource rest{};
  check(api, api.split(groups.data(), &made, &whole, &rest, 0, plan.sms_per_device),
        "cuDevSmResourceSplitByCount");
  if (made < static_cast<unsigned>(count)) {
    throw ConfigurationError("SM split: the driver made only " + std::to_string(made) +
                                 " partitions of " + std::to_string(plan.sms_per_device) +
                                 " SMs for " + std::to_string(count) + " logical GPUs",
                             ConfigurationSubject::kSmSplit);
  }

  CudaExecutionSet set;
  for (CUdevResource& group : groups) {
    CUdevResourceDesc desc = nullptr;
    check(api, api.generate_desc(&desc, &group, 1), "cuDevResourceGenerateDesc");
    CUgreenCtx context = nullptr;
    const CUresult created = api.create(&context, desc, device, CU_GREEN_CTX_DEFAULT_STREAM);
    if (created == CUDA_ERROR_NOT_SUPPORTED) {  // e.g. under MPS
      *unavailable = "cuGreenCtxCreate: " + driver_error_text(api, created);
      return {};  // the ones already made are destroyed with `set`
    }
    check(api, created, "cuGreenCtxCreate");
    auto execution =
        std::make_unique<GreenExecution>(api, context, static_cast<int>(group.sm.smCount));
    execution->make_stream();
    set.devices.push_back(std::move(execution));
  }
  const unsigned left = rest.type == CU_DEV_RESOURCE_TYPE_SM ? rest.sm.smCount : 0;
  set.sm_note = "SM split: each of the " + std::to_string(count) + " devices has its own " +
                std::to_string(groups.front().sm.smCount) + " of the " +
                std::to_string(whole.sm.smCount) + " SMs of GPU:" + std::to_string(ordinal) +
                " (CUDA green contexts)" +
                (left > 0 ? "; " + std::to_string(left) + " SMs stay unused" : std::string());
  return set;
}

}  // namespace mirrorlab::vgpu
