#include <string>

#include "virtualgpu/collectives/nccl/nccl_all_reduce.h"

namespace mirrorlab::vgpu {

std::string nccl_version_text(int code) {
  if (code <= 0) return "none";
  // NCCL 2.9 changed the encoding from major*1000 + minor*100 + patch to
  // major*10000 + minor*100 + patch.
  const bool wide = code >= 10000;
  const int major = wide ? code / 10000 : code / 1000;
  const int minor = wide ? code % 10000 / 100 : code % 1000 / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace mirrorlab::vgpu
