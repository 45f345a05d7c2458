// NcclApi over the NCCL library (NCCL builds), and what the build's NCCL is (nccl_runtime).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"
#include "virtualgpu/collectives/nccl/nccl_api.h"

namespace mirrorlab::vgpu {
namespace {

[[noreturn]] void throw_nccl_error(ncclResult_t result, const char* expression, const char* file,
                                   int line) {
  // ncclGetLastError(nullptr) gives the last error message of any communicator of the process.
  const char* detail = ncclGetLastError(nullptr);
  throw std::runtime_error(
      std::string(expression) + " failed at " + file + ":" + std::to_string(line) + ": " +
      ncclGetErrorString(result) +
      (detail != nullptr && *detail != '\0' ? std::string(" (") + detail + ")" : std::string()));
}

#define MIRRORLAB_NCCL_CHECK(expr)                                         \
  do {                                                                     \
    const ncclResult_t mirrorlab_nccl_status_ = (expr);                    \
    if (mirrorlab_nccl_status_ != ncclSuccess) {                           \
      throw_nccl_error(mirrorlab_nccl_status_, #expr, __FILE__, __LINE__); \
    }                                                                      \
  } while (0)

class LibraryNcclApi final : public NcclApi {
 public:
  std::vector<NcclComm> init_all(const std::vector<int>& ordinals) override {
    std::vector<ncclComm_t> comms(ordinals.size(), nullptr);
    MIRRORLAB_NCCL_CHECK(
        ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), ordinals.data()));
    return {comms.begin(), comms.end()};
  }
  std::string unique_id() override {
    ncclUniqueId id{};
    MIRRORLAB_NCCL_CHECK(ncclGetUniqueId(&id));
    return std::string(id.internal, sizeof id.internal);
  }
  NcclComm init_rank(int ranks, const std::string& id, int rank) override {
    ncclUniqueId unique{};
    if (id.size() != sizeof unique.internal) {
      throw std::invalid_argument("an NCCL unique id is " + std::to_string(sizeof unique.internal) +
                                  " bytes, not " + std::to_string(id.size()));
    }
    std::memcpy(unique.internal, id.data(), id.size());
    ncclComm_t comm = nullptr;
    MIRRORLAB_NCCL_CHECK(ncclCommInitRank(&comm, ranks, unique, rank));
    return comm;
  }
  void destroy(NcclComm comm) noexcept override {
    (void)ncclCommDestroy(static_cast<ncclComm_t>(comm));
  }
  void group_start() override { MIRRORLAB_NCCL_CHECK(ncclGroupStart()); }
  void all_reduce_sum(float* data, std::size_t count, NcclComm comm, GpuStream stream) override {
    MIRRORLAB_NCCL_CHECK(ncclAllReduce(data, data, count, ncclFloat, ncclSum,
                                       static_cast<ncclComm_t>(comm),
                                       static_cast<cudaStream_t>(stream)));
  }
  void group_end() override { MIRRORLAB_NCCL_CHECK(ncclGroupEnd()); }
};

}  // namespace

NcclApi& process_nccl_api() {
  static LibraryNcclApi api;
  return api;
}

NcclRuntime nccl_runtime() {
  NcclRuntime runtime;
  runtime.built = true;
  int version = 0;
  if (ncclGetVersion(&version) == ncclSuccess) runtime.version_code = version;
  return runtime;
}

}  // namespace mirrorlab::vgpu
