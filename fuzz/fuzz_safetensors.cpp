// Fuzz target: the safetensors reader (core/checkpoint/safetensors.h) on its own, as a
// checkpoint's weights file is read once its checksum matched. Any input must parse or be
// refused with a SafetensorsError; what it returns must be what the format promises, and write
// back to a file that reads the same.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/checkpoint/safetensors.h"
#include "fuzz/fuzz_input.h"

namespace {

bool same(const mirrorlab::core::Safetensors& a, const mirrorlab::core::Safetensors& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& x = a.tensors[i];
    const auto& y = b.tensors[i];
    if (x.name != y.name || x.shape != y.shape || x.values.size() != y.values.size()) return false;
    // Bit for bit (NaNs too); an empty tensor's data() may be null, which memcmp may not take.
    if (!x.values.empty() &&
        std::memcmp(x.values.data(), y.values.data(), x.values.size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mirrorlab::core;
  Safetensors file;
  try {
    file = parse_safetensors(mirrorlab::fuzz::as_text(data, size));
  } catch (const SafetensorsError&) {
    return 0;
  }
  // The byte ranges tile the data: the values add up to what is left after the header.
  std::size_t values = 0;
  for (const SafetensorsTensor& t : file.tensors) values += t.values.size();
  std::uint64_t header = 0;
  std::memcpy(&header, data, 8);  // the reader checked there are 8 bytes (little-endian host)
  if (values * 4 != size - 8 - header) std::abort();
  // What was read writes back and reads the same (a tensor the writer refuses would be one the
  // reader should have refused).
  if (!same(parse_safetensors(write_safetensors(file)), file)) std::abort();
  return 0;
}
