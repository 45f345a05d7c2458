// JSON read from a file mirrorlab did not necessarily write: nesting deeper than its own files
// have is refused while parsing, so no input can exhaust the stack of whatever walks the value
// afterwards (dump(), the destructor). Throws nlohmann::json::exception or std::runtime_error.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace mirrorlab::core {

inline nlohmann::json parse_shallow_json(std::string_view text, int max_depth = 16) {
  return nlohmann::json::parse(text, [max_depth](int depth, nlohmann::json::parse_event_t,
                                                 nlohmann::json&) {
    if (depth > max_depth) {
      throw std::runtime_error("nested more than " + std::to_string(max_depth) + " levels deep");
    }
    return true;
  });
}

}  // namespace mirrorlab::core
