// A device a replica runs on. Today: a CPU-backed virtual GPU (a worker-thread stream plus a
// capped host-memory arena). CUDA physical and logical GPUs (issue 3) are further kinds of the
// same thing: a name, an arena and a stream.
#pragma once

#include <cstddef>
#include <string>

#include "virtualgpu/memory_arena.h"
#include "virtualgpu/stream.h"

namespace mirrorlab::vgpu {

enum class DeviceKind { kCpuVirtualGpu, kCudaPhysicalGpu, kCudaLogicalGpu };

const char* to_string(DeviceKind kind);  // "CPU-backed virtual GPU", ...

class Device {
 public:
  Device(int index, DeviceKind kind, std::size_t memory_limit_bytes);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  int index() const { return index_; }
  const std::string& name() const { return name_; }  // TensorFlow's style: "/gpu:0"
  DeviceKind kind() const { return kind_; }
  MemoryArena& memory() { return memory_; }
  const MemoryArena& memory() const { return memory_; }
  Stream& stream() { return stream_; }

 private:
  int index_;
  std::string name_;
  DeviceKind kind_;
  MemoryArena memory_;
  Stream stream_;  // last: its thread starts once the rest is built, stops first
};

}  // namespace mirrorlab::vgpu
