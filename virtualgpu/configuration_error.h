// The error for a user's mistake in the device configuration (too many devices, a memory limit
// the card cannot give, a GPU that is not there). The command line turns it into exit status 2.
#pragma once

#include <stdexcept>

namespace mirrorlab::vgpu {

// what() says what was wrong and what to do.
class ConfigurationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace mirrorlab::vgpu
