// GreenDriver (green_contexts.h) over CUDA's driver API, reached at run time with
// cudaGetDriverEntryPointByVersion: the binary never links libcuda, so it still starts on a
// machine without the driver (CI), and a driver older than the API (12.4) is a sentence, not a
// failure to load. Each method is one driver call (or two), checked; what is done with them is
// green_contexts.cpp's, tested against a fake in every build. Memory is the primary context's,
// so cudaMalloc'd arenas work in every green context of the card.
#include "virtualgpu/cuda/green/cuda_green_context.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <memory>
#include <vector>

#include "virtualgpu/cuda/cuda_check.h"
#include "virtualgpu/cuda/cuda_runtime.h"
#include "virtualgpu/cuda/green/green_contexts.h"

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
         cuda_version_text(driver) + ") has no " + symbol +
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

// The driver's calls for one make_green_executions (it keeps the SM resource and the groups
// between sm_resource, split and create_context), then for the executions' destruction.
class CudaGreenDriver final : public GreenDriver {
 public:
  explicit CudaGreenDriver(const GreenApi& api) : api_(api) {}

  void use_primary_context(int ordinal) override {
    // cudaFree(nullptr) creates it; without it each green context would set it up and tear it
    // down again.
    CurrentGpuGuard guard(ordinal);
    MIRRORLAB_CUDA_CHECK(cudaFree(nullptr));
  }
  bool sm_resource(int ordinal, SmResource* out, std::string* why) override {
    check(api_, api_.device_get(&device_, ordinal), "cuDeviceGet");
    const CUresult got = api_.get_resource(device_, &whole_, CU_DEV_RESOURCE_TYPE_SM);
    if (got == CUDA_ERROR_NOT_SUPPORTED) {
      *why = "this GPU or driver does not support SM partitions (cuDeviceGetDevResource: " +
             driver_error_text(api_, got) + ")";
      return false;
    }
    check(api_, got, "cuDeviceGetDevResource");
    *out = SmResource{whole_.sm.smCount, whole_.sm.minSmPartitionSize,
                      whole_.sm.smCoscheduledAlignment};
    return true;
  }
  Split split(int count, unsigned sms) override {
    groups_.assign(static_cast<std::size_t>(count), CUdevResource{});
    unsigned made = static_cast<unsigned>(count);
    CUdevResource rest{};
    check(api_, api_.split(groups_.data(), &made, &whole_, &rest, 0, sms),
          "cuDevSmResourceSplitByCount");
    groups_.resize(made);
    return Split{made, made > 0 ? groups_.front().sm.smCount : 0,
                 rest.type == CU_DEV_RESOURCE_TYPE_SM ? rest.sm.smCount : 0};
  }
  Context create_context(int group, std::string* why) override {
    CUdevResourceDesc desc = nullptr;
    check(api_, api_.generate_desc(&desc, &groups_.at(static_cast<std::size_t>(group)), 1),
          "cuDevResourceGenerateDesc");
    CUgreenCtx context = nullptr;
    const CUresult created = api_.create(&context, desc, device_, CU_GREEN_CTX_DEFAULT_STREAM);
    if (created == CUDA_ERROR_NOT_SUPPORTED) {  // e.g. under MPS
      *why = "cuGreenCtxCreate: " + driver_error_text(api_, created);
      return nullptr;
    }
    check(api_, created, "cuGreenCtxCreate");
    return context;
  }
  Stream create_stream(Context context) override {
    CUstream stream = nullptr;
    check(api_,
          api_.stream_create(&stream, static_cast<CUgreenCtx>(context), CU_STREAM_NON_BLOCKING, 0),
          "cuGreenCtxStreamCreate");
    return stream;
  }
  void destroy_stream(Stream stream) noexcept override {
    (void)api_.stream_destroy(static_cast<CUstream>(stream));
  }
  void destroy_context(Context context) noexcept override {
    (void)api_.destroy(static_cast<CUgreenCtx>(context));
  }

 private:
  GreenApi api_;
  CUdevice device_ = 0;
  CUdevResource whole_{};
  std::vector<CUdevResource> groups_;
};

}  // namespace

CudaExecutionSet make_green_executions(int ordinal, int count, std::string* unavailable) {
  GreenApi api;
  if (!load_green_api(&api, unavailable)) return {};
  return make_green_executions(std::make_shared<CudaGreenDriver>(api), ordinal, count, unavailable);
}

}  // namespace mirrorlab::vgpu
