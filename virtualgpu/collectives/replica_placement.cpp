#include "virtualgpu/collectives/replica_placement.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace mirrorlab::vgpu {

int most_replicas_per_gpu(const std::vector<ReplicaPlacement>& replicas) {
  std::map<int, int> per_gpu;
  int most = 0;
  for (const ReplicaPlacement& r : replicas) {
    if (r.cuda_ordinal < 0) return 0;
    most = std::max(most, ++per_gpu[r.cuda_ordinal]);
  }
  return most;
}

std::vector<ReplicaPlacement> placements_of(const std::vector<Device*>& devices) {
  std::vector<ReplicaPlacement> placements;
  for (const Device* d : devices) placements.push_back({d->name(), d->kind(), d->cuda_ordinal()});
  return placements;
}

std::string tensorflow_device_name(std::string_view name) {
  // "/gpu:1" -> "GPU:1"; a name without that shape is kept as it is.
  const std::size_t colon = name.find(':');
  if (name.empty() || name[0] != '/' || colon == std::string_view::npos) return std::string(name);
  std::string type(name.substr(1, colon - 1));
  for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "/job:localhost/replica:0/task:0/device:" + type + std::string(name.substr(colon));
}

std::string device_tuple(const std::vector<std::string>& names) {
  std::string tuple = "(";
  for (std::size_t i = 0; i < names.size(); ++i) tuple += (i ? ", '" : "'") + names[i] + "'";
  return tuple + (names.size() == 1 ? ",)" : ")");
}

std::string tensorflow_device_tuple(const std::vector<ReplicaPlacement>& replicas) {
  std::vector<std::string> names;
  for (const ReplicaPlacement& r : replicas) names.push_back(tensorflow_device_name(r.name));
  return device_tuple(names);
}

}  // namespace mirrorlab::vgpu
