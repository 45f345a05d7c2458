// A device's memory: a capped arena with exact in-use and peak accounting.
//
// Every tensor, gradient and optimizer slot of a replica is taken from its device's arena, so the
// memory bar a class sees is the real one. Accounting is exact: in_use() is the sum of the bytes
// of the live allocations, as requested (no rounding), and peak() its high-water mark.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mirrorlab::vgpu {

inline constexpr std::size_t kMiB = std::size_t{1} << 20;
// A size in the largest binary unit it reaches, to four digits: "512 B", "4 KiB", "1.5 MiB".
std::string size_label(double bytes);

// Which memory ran out.
enum class MemoryRanOut {
  kLimit,   // the arena's own limit (the device's memory limit)
  kHost,    // the host's memory, under a CPU-backed device's limit
  kDevice,  // the memory behind some other allocator
  kGpu,     // a CUDA card's memory (other programs or devices hold the rest)
};

// Thrown when an allocation would pass the arena's limit, or when the memory behind the arena
// (host RAM, the card) runs out below it. what() names the device, the request, what is in use
// and the limit, and which memory ran out; the front ends say what to do (each in its words).
class OutOfMemoryError : public std::runtime_error {
 public:
  // Over the limit.
  OutOfMemoryError(const std::string& device, std::string_view what, std::size_t requested,
                   std::size_t in_use, std::size_t limit);
  // Under the limit, but the memory behind the arena is exhausted: `exhausted` says which memory
  // (BlockAllocator::exhausted()).
  OutOfMemoryError(const std::string& device, std::string_view what, std::size_t requested,
                   std::size_t in_use, std::size_t limit, MemoryRanOut ran_out,
                   std::string_view exhausted);
  bool over_limit() const { return ran_out_ == MemoryRanOut::kLimit; }
  MemoryRanOut ran_out() const { return ran_out_; }
  const std::string& device() const { return device_; }
  std::size_t requested() const { return requested_; }
  std::size_t in_use() const { return in_use_; }
  std::size_t limit() const { return limit_; }

 private:
  std::string device_;
  std::size_t requested_, in_use_, limit_;
  MemoryRanOut ran_out_;
};

class MemoryArena;

// Where an arena's blocks come from: host memory (CPU-backed virtual GPUs, the default) or a
// CUDA device (cudaMalloc, for physical and logical GPUs). The arena does the accounting and the
// cap; the allocator only hands out and takes back zero-filled blocks.
class BlockAllocator {
 public:
  virtual ~BlockAllocator() = default;
  // A zero-filled block of at least `bytes` (> 0), 64-byte aligned or better; nullptr when the
  // memory behind it is exhausted (the arena turns that into an OutOfMemoryError).
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* ptr, std::size_t bytes) noexcept = 0;
  // True when the host may read and write the blocks directly (host memory).
  virtual bool host_accessible() const = 0;
  // After allocate() gave nullptr: which memory ran out and what to do, for the arena's error.
  virtual std::string exhausted() const;
  virtual MemoryRanOut ran_out() const { return MemoryRanOut::kDevice; }
};

// exhausted() of a GPU's allocator: its cudaMalloc failed below the device's limit (the card is
// full: other programs, or the other devices on it, hold the rest).
std::string gpu_memory_exhausted(int ordinal);

// Aligned host memory; what a CPU-backed virtual GPU computes in.
std::unique_ptr<BlockAllocator> make_host_allocator();

// Move-only owner of one block from an arena; gives the bytes back when destroyed.
class Allocation {
 public:
  Allocation() = default;
  ~Allocation() { reset(); }
  Allocation(Allocation&& other) noexcept;
  Allocation& operator=(Allocation&& other) noexcept;
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;

  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  explicit operator bool() const { return ptr_ != nullptr; }
  void reset();  // gives the block back now

 private:
  friend class MemoryArena;
  Allocation(MemoryArena* arena, void* ptr, std::size_t bytes)
      : arena_(arena), ptr_(ptr), bytes_(bytes) {}
  MemoryArena* arena_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A device's memory arena. Thread-safe. Blocks come from its BlockAllocator (host memory unless
// another is given), 64-byte aligned and zero-initialised. A request of 0 bytes gives an empty
// Allocation and counts nothing. The arena must outlive its allocations (asserted in the
// destructor).
class MemoryArena {
 public:
  MemoryArena(std::string device_name, std::size_t limit_bytes,
              std::unique_ptr<BlockAllocator> allocator = nullptr);  // nullptr: host memory
  ~MemoryArena();
  MemoryArena(const MemoryArena&) = delete;
  MemoryArena& operator=(const MemoryArena&) = delete;

  // `what` names the request in the error message ("dense_1/kernel gradient").
  Allocation allocate(std::size_t bytes, std::string_view what);

  const std::string& device_name() const { return device_name_; }
  std::size_t limit() const { return limit_; }
  // Whether the host may touch the blocks directly (false for CUDA device memory).
  bool host_accessible() const { return allocator_->host_accessible(); }
  std::size_t in_use() const;
  std::size_t peak() const;
  void reset_peak();  // peak := in_use
  // How many blocks have been given back so far: while it stays the same, every block handed out
  // before is still where it was (what a captured graph's pointers rely on).
  std::uint64_t blocks_given_back() const;

 private:
  friend class Allocation;
  void release(void* ptr, std::size_t bytes);

  std::string device_name_;
  std::size_t limit_;
  std::unique_ptr<BlockAllocator> allocator_;
  mutable std::mutex mutex_;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
  std::uint64_t given_back_ = 0;
};

}  // namespace mirrorlab::vgpu
