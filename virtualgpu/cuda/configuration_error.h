// The error for a user's mistake in the device configuration (too many devices, a memory limit
// the card cannot give, a GPU that is not there). what() states the facts in the devices' own
// terms; subject() says which setting it is about, so that each front end gives its advice in
// its own words (the command line names the flag, the GUI its setting). The command line turns
// it into exit status 2.
#pragma once

#include <stdexcept>
#include <string>

namespace mirrorlab::vgpu {

enum class ConfigurationSubject {
  kGeneral,       // no single setting (a frozen configuration, a mix of device kinds)
  kDeviceCount,   // how many devices
  kMemoryLimit,   // the devices' memory limits
  kPhysicalGpus,  // which physical GPUs
  kSmSplit,       // giving each logical GPU its own SMs
  kBackend,       // which kind of device: CPU-backed or CUDA
};

class ConfigurationError : public std::runtime_error {
 public:
  explicit ConfigurationError(const std::string& what,
                              ConfigurationSubject subject = ConfigurationSubject::kGeneral)
      : std::runtime_error(what), subject_(subject) {}
  ConfigurationSubject subject() const { return subject_; }

 private:
  ConfigurationSubject subject_;
};

}  // namespace mirrorlab::vgpu
