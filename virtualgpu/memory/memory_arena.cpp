#include "virtualgpu/memory/memory_arena.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mirrorlab::vgpu {
namespace {

std::string mib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  return text;
}

std::string out_of_memory_message(const std::string& device, std::string_view what,
                                  std::size_t requested, std::size_t in_use, std::size_t limit) {
  return device + ": out of memory: cannot allocate " + mib(requested) + " for " +
         std::string(what) + " (" + mib(in_use) + " of its " + mib(limit) +
         " limit already in use)";
}

std::string exhausted_message(const std::string& device, std::string_view what,
                              std::size_t requested, std::size_t in_use, std::size_t limit,
                              std::string_view exhausted) {
  return device + ": out of memory: cannot allocate " + mib(requested) + " for " +
         std::string(what) + " (" + mib(in_use) + " of its " + mib(limit) +
         " limit in use, so the limit allows it), but " + std::string(exhausted);
}

constexpr std::size_t kAlignment = 64;

class HostAllocator final : public BlockAllocator {
 public:
  void* allocate(std::size_t bytes) override {
    const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* ptr = std::aligned_alloc(kAlignment, rounded);
    if (ptr != nullptr) std::memset(ptr, 0, rounded);
    return ptr;
  }
  void release(void* ptr, std::size_t /*bytes*/) noexcept override { std::free(ptr); }
  bool host_accessible() const override { return true; }
  std::string exhausted() const override { return "this machine's memory is exhausted"; }
  MemoryRanOut ran_out() const override { return MemoryRanOut::kHost; }
};

}  // namespace

std::string size_label(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.4g %s", bytes, units[unit]);
  return text;
}

std::string BlockAllocator::exhausted() const {
  return "the memory behind this device is exhausted";
}

std::string gpu_memory_exhausted(int ordinal) {
  const std::string gpu = "GPU " + std::to_string(ordinal);
  return gpu + " has no free memory left (its cudaMalloc failed: other programs, or the other " +
         "devices on the card, hold the rest)";
}

std::unique_ptr<BlockAllocator> make_host_allocator() { return std::make_unique<HostAllocator>(); }

OutOfMemoryError::OutOfMemoryError(const std::string& device, std::string_view what,
                                   std::size_t requested, std::size_t in_use, std::size_t limit)
    : std::runtime_error(out_of_memory_message(device, what, requested, in_use, limit)),
      device_(device),
      requested_(requested),
      in_use_(in_use),
      limit_(limit),
      ran_out_(MemoryRanOut::kLimit) {}

OutOfMemoryError::OutOfMemoryError(const std::string& device, std::string_view what,
                                   std::size_t requested, std::size_t in_use, std::size_t limit,
                                   MemoryRanOut ran_out, std::string_view exhausted)
    : std::runtime_error(exhausted_message(device, what, requested, in_use, limit, exhausted)),
      device_(device),
      requested_(requested),
      in_use_(in_use),
      limit_(limit),
      ran_out_(ran_out) {}

Allocation::Allocation(Allocation&& other) noexcept
    : arena_(other.arena_), ptr_(other.ptr_), bytes_(other.bytes_) {
  other.arena_ = nullptr;
  other.ptr_ = nullptr;
  other.bytes_ = 0;
}

Allocation& Allocation::operator=(Allocation&& other) noexcept {
  if (this != &other) {
    reset();
    arena_ = other.arena_;
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.arena_ = nullptr;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void Allocation::reset() {
  if (arena_ != nullptr) arena_->release(ptr_, bytes_);
  arena_ = nullptr;
  ptr_ = nullptr;
  bytes_ = 0;
}

MemoryArena::MemoryArena(std::string device_name, std::size_t limit_bytes,
                         std::unique_ptr<BlockAllocator> allocator)
    : device_name_(std::move(device_name)),
      limit_(limit_bytes),
      allocator_(allocator ? std::move(allocator) : make_host_allocator()) {}

MemoryArena::~MemoryArena() {
  // Every tensor must be gone before its device: a live allocation here is a programming error.
  assert(in_use_ == 0 && "MemoryArena destroyed while allocations are alive");
}

Allocation MemoryArena::allocate(std::size_t bytes, std::string_view what) {
  if (bytes == 0) return {};
  std::size_t peak_before = 0;
  {
    std::lock_guard lock(mutex_);
    if (bytes > limit_ - in_use_) {
      throw OutOfMemoryError(device_name_, what, bytes, in_use_, limit_);
    }
    peak_before = peak_;
    in_use_ += bytes;
    if (in_use_ > peak_) peak_ = in_use_;
  }
  // Under the cap but the memory behind the arena is exhausted (host RAM, or the card), or the
  // allocator failed (a CUDA error): the bytes were never held, so neither the count nor the
  // peak may keep them.
  auto give_back_count = [&] {
    std::lock_guard lock(mutex_);
    in_use_ -= bytes;
    if (peak_ == in_use_ + bytes) peak_ = std::max(peak_before, in_use_);
  };
  void* ptr = nullptr;
  try {
    ptr = allocator_->allocate(bytes);
  } catch (...) {
    give_back_count();
    throw;
  }
  if (ptr == nullptr) {
    give_back_count();
    throw OutOfMemoryError(device_name_, what, bytes, in_use(), limit_, allocator_->ran_out(),
                           allocator_->exhausted());
  }
  return Allocation(this, ptr, bytes);
}

void MemoryArena::release(void* ptr, std::size_t bytes) {
  allocator_->release(ptr, bytes);
  std::lock_guard lock(mutex_);
  in_use_ -= bytes;
  ++given_back_;
}

std::uint64_t MemoryArena::blocks_given_back() const {
  std::lock_guard lock(mutex_);
  return given_back_;
}

std::size_t MemoryArena::in_use() const {
  std::lock_guard lock(mutex_);
  return in_use_;
}

std::size_t MemoryArena::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

void MemoryArena::reset_peak() {
  std::lock_guard lock(mutex_);
  peak_ = in_use_;
}

}  // namespace mirrorlab::vgpu
