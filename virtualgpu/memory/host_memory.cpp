#include "virtualgpu/memory/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace mirrorlab::vgpu {
namespace {

// A "VmSize:   123456 kB" line of /proc/self/status, in bytes (0 if absent).
std::size_t proc_status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      return static_cast<std::size_t>(std::strtoull(line.c_str() + key.size() + 1, nullptr, 10)) *
             1024;
    }
  }
  return 0;
}

// The cgroup v2 memory limit of this process, 0 when there is none.
std::size_t cgroup_limit() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  return static_cast<std::size_t>(std::strtoull(text.c_str(), nullptr, 10));
}

std::string gib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

}  // namespace

std::size_t HostMemory::can_back() const {
  return mappable_bytes == 0 ? ram_bytes : std::min(ram_bytes, mappable_bytes);
}

std::string HostMemory::describe() const {
  if (mappable_bytes != 0 && mappable_bytes < ram_bytes) {
    return gib(mappable_bytes) + " of address space left under " + mappable_source;
  }
  return gib(ram_bytes) + " of " + ram_source;
}

HostMemory query_host_memory() {
  HostMemory host;
  host.ram_bytes = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) *
                   static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
  if (const std::size_t cgroup = cgroup_limit(); cgroup != 0 && cgroup < host.ram_bytes) {
    host.ram_bytes = cgroup;
    host.ram_source = "the cgroup's memory limit";
  }
  // Address-space limits count what is already mapped (libraries, stacks, the heap).
  struct Limit {
    int resource;
    const char* name;
    const char* used_key;
  };
  for (const Limit& l : {Limit{RLIMIT_AS, "ulimit -v (RLIMIT_AS)", "VmSize"},
                         Limit{RLIMIT_DATA, "ulimit -d (RLIMIT_DATA)", "VmData"}}) {
    rlimit limit{};
    if (getrlimit(l.resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) continue;
    const std::size_t cap = static_cast<std::size_t>(limit.rlim_cur);
    const std::size_t used = proc_status_bytes(l.used_key);
    const std::size_t left = cap > used ? cap - used : 1;
    if (host.mappable_bytes == 0 || left < host.mappable_bytes) {
      host.mappable_bytes = left;
      host.mappable_source = l.name;
    }
  }
  return host;
}

bool can_map_blocks(std::size_t bytes, int count) {
  std::vector<void*> blocks;
  bool ok = true;
  for (int i = 0; i < count && ok; ++i) {
    void* p = std::malloc(bytes);  // large: mapped, not touched, so it costs no RAM
    ok = p != nullptr;
    if (ok) blocks.push_back(p);
  }
  for (void* p : blocks) std::free(p);
  return ok;
}

}  // namespace mirrorlab::vgpu
