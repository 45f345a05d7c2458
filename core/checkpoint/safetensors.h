// safetensors, the weights layout other tools read (Hugging Face's safetensors, torch, numpy
// readers): an 8-byte little-endian header length N, N bytes of JSON naming each tensor's dtype,
// shape and byte range, then the raw little-endian bytes. mirrorlab writes and reads float32
// ("F32") only. The reader takes bytes and throws SafetensorsError, never more: a fuzzer can call
// it on any buffer.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace mirrorlab::core {

// What is wrong with a safetensors buffer, in a sentence (the caller adds the file's name).
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SafetensorsTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;  // shape's product of them
};

struct Safetensors {
  std::map<std::string, std::string> metadata;  // "__metadata__": text to text
  std::vector<SafetensorsTensor> tensors;       // in the order of their bytes
};

// The file's bytes: tensors in the order given, laid end to end; the header padded with spaces
// to a multiple of 8 bytes (as the reference writer does). Throws std::invalid_argument for a
// tensor whose values do not fill its shape, or a repeated or empty name.
std::string write_safetensors(const Safetensors& file);

// Reads a whole safetensors file. Every byte range must lie in the data, match its shape, and
// the ranges must tile the data without gap or overlap.
Safetensors parse_safetensors(std::string_view bytes);

}  // namespace mirrorlab::core
