// How much memory this host can give the process: its RAM (or a lower cgroup limit) and, under
// `ulimit -v` / `ulimit -d`, how much address space the process may still map. CPU-backed
// virtual GPUs live in host memory, so their limits are checked against it.
#pragma once

#include <cstddef>
#include <string>

namespace mirrorlab::vgpu {

struct HostMemory {
  std::size_t ram_bytes = 0;       // physical memory, or the cgroup's memory.max when lower
  std::string ram_source = "RAM";  // "RAM" or "the cgroup's memory limit"
  std::size_t mappable_bytes = 0;  // address space the process may still map (0: no limit)
  std::string mappable_source;     // "ulimit -v (RLIMIT_AS)", "ulimit -d (RLIMIT_DATA)" or ""

  // The most one allocation of host memory can hope to get.
  std::size_t can_back() const;
  // "23.4 GiB of RAM", or "1.3 GiB of address space left under ulimit -v (RLIMIT_AS)".
  std::string describe() const;
};

// What this process sees now.
HostMemory query_host_memory();

// Whether `count` blocks of `bytes` each can be mapped at the same time right now (they are
// mapped, not touched, then given back).
bool can_map_blocks(std::size_t bytes, int count);

}  // namespace mirrorlab::vgpu
