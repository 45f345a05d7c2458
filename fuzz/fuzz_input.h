// Shared by the fuzz targets (fuzz/README.md): one input holds the two files a reader takes
// together (an IDX images file and its labels; a checkpoint's state and its weights), cut at a
// marker line, so that the corpus files stay files a person can read and edit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace mirrorlab::fuzz {

inline constexpr std::string_view kNextFile = "\n~~~~ next file ~~~~\n";

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The bytes before the first marker and those after it; without a marker, all of it and nothing.
inline std::pair<std::string_view, std::string_view> two_files(std::string_view input) {
  const std::size_t at = input.find(kNextFile);
  if (at == std::string_view::npos) return {input, {}};
  return {input.substr(0, at), input.substr(at + kNextFile.size())};
}

}  // namespace mirrorlab::fuzz
