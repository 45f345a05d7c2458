// A replica's weight fingerprint: a 64-bit hash of the exact bits of its parameters. Mirrored
// replicas must hold bit-identical weights after every step, so equal fingerprints are the
// check, and a difference is a bug (or a broken all-reduce) caught at the step it happens.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

namespace mirrorlab::core {

inline std::uint64_t fingerprint(std::span<const float> values) {
  // Four independent multiply-xorshift lanes over 32-bit words: fast enough to run every step
  // (memory bound), and any changed bit changes the result with overwhelming probability.
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;
  std::uint64_t lane[4] = {1, 2, 3, 4};
  std::size_t i = 0;
  const std::size_t n = values.size();
  for (; i + 4 <= n; i += 4) {
    for (int l = 0; l < 4; ++l) {
      std::uint32_t bits;
      std::memcpy(&bits, &values[i + l], sizeof bits);
      lane[l] = (lane[l] ^ bits) * kMul;
    }
  }
  for (; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof bits);
    lane[0] = (lane[0] ^ bits) * kMul;
  }
  std::uint64_t h = n;
  for (std::uint64_t l : lane) h = (h ^ (l >> 29) ^ l) * kMul;
  return h ^ (h >> 32);
}

}  // namespace mirrorlab::core
