// Where each replica lives (a CPU-backed virtual GPU, or which CUDA GPU), and the names
// TensorFlow gives those devices: what the table of algorithms and the choice among them read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "virtualgpu/devices/device.h"

namespace mirrorlab::vgpu {

// Where a replica lives: what decides which algorithms can run.
struct ReplicaPlacement {
  std::string name;  // "/gpu:0"
  DeviceKind kind = DeviceKind::kCpuVirtualGpu;
  int cuda_ordinal = -1;  // the physical GPU, -1 for a CPU-backed virtual GPU
};
std::vector<ReplicaPlacement> placements_of(const std::vector<Device*>& devices);
// The most replicas that share one physical GPU (0 when any replica is CPU-backed).
int most_replicas_per_gpu(const std::vector<ReplicaPlacement>& replicas);

// A device's full name as TensorFlow logs it: "/gpu:1" -> "/job:localhost/replica:0/task:0/
// device:GPU:1" (what tf.distribute's device_util.canonicalize gives).
std::string tensorflow_device_name(std::string_view name);
// The replicas' full names as such a tuple, as MirroredStrategy logs its devices.
std::string tensorflow_device_tuple(const std::vector<ReplicaPlacement>& replicas);

}  // namespace mirrorlab::vgpu
