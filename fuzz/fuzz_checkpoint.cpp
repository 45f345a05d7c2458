// Fuzz target: the checkpoint reader (core/checkpoint/checkpoint.h), as `train --resume DIR`
// and the GUI's Load read a checkpoint: the JSON state, then the safetensors weights beside it
// (fuzz_input.h). Any input must decode or be refused with a CheckpointError; anything else is a
// finding.
//
// Both files carry checksums (the state's own CRC-32, the weights' size and CRC-32), which a
// mutated input almost never matches, so the reader would refuse nearly everything at the first
// check. Where the state is a JSON object the target therefore writes the checksums it needs
// (as a tool repairing a checkpoint would) and decodes that too: the fields behind the
// checksums get fuzzed, and so does the checksum test itself on the input as it came.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/shallow_json.h"
#include "fuzz/fuzz_input.h"

namespace {

using mirrorlab::core::CheckpointError;
using mirrorlab::core::crc32_of;

void decode(std::string_view state, std::string_view weights) {
  try {
    mirrorlab::core::decode_checkpoint(state, weights, "fuzz/ckpt-00000001.json",
                                       "fuzz/ckpt-00000001.safetensors");
  } catch (const CheckpointError&) {
  }
}

// The state with its checksums made to match `weights`, or "" when it is no JSON object with a
// "weights" object (the reader refuses those before any checksum).
std::string sealed(std::string_view state, std::string_view weights) {
  nlohmann::json json;
  try {
    json = mirrorlab::core::parse_shallow_json(state);
  } catch (const std::exception&) {
    return "";
  }
  if (!json.is_object() || !json.contains("weights") || !json["weights"].is_object()) return "";
  json["weights"]["bytes"] = weights.size();
  json["weights"]["crc32"] = crc32_of(weights);
  json.erase("checksum");
  json["checksum"] = crc32_of(json.dump());
  return json.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto [state, weights] = mirrorlab::fuzz::two_files(mirrorlab::fuzz::as_text(data, size));
  decode(state, weights);
  if (const std::string repaired = sealed(state, weights); !repaired.empty()) {
    decode(repaired, weights);
  }
  return 0;
}
