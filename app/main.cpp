// mirrorlab: mirrored (synchronous data-parallel) training on virtual GPUs, for teaching.
#include <cstdio>
#include <exception>

#include "app/command_line.h"
#include "core/dataset.h"
#include "virtualgpu/configuration_error.h"
#include "virtualgpu/memory_arena.h"

namespace {

// What went wrong, after whatever the run printed so far.
void report(const std::exception& e) {
  std::fflush(stdout);
  std::fprintf(stderr, "\nmirrorlab: error: %s\n", e.what());
}

int run(mirrorlab::app::CommandLine& command_line) {
  using namespace mirrorlab;
  try {
    return command_line.run();
  } catch (const vgpu::OutOfMemoryError& e) {
    report(e);
  } catch (const core::DataError& e) {
    report(e);
  } catch (const vgpu::ConfigurationError& e) {
    report(e);
    return 2;
  } catch (const std::exception& e) {  // vgpu::CudaError among them
    report(e);
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  mirrorlab::app::CommandLine command_line;
  if (const int status = command_line.parse(argc, argv); status >= 0) return status;
  return run(command_line);
}
