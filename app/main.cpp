// mirrorlab: mirrored (synchronous data-parallel) training on virtual GPUs, for teaching.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "app/command_line.h"
#include "app/interrupt.h"
#include "app/output_files.h"
#include "core/io/dataset.h"
#include "virtualgpu/cuda/configuration_error.h"
#include "virtualgpu/memory/memory_arena.h"

namespace {

int run(mirrorlab::app::CommandLine& command_line) {
  using namespace mirrorlab;
  // What went wrong, after whatever the run printed so far, with what to change.
  const auto report = [&](const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "\nmirrorlab: error: %s\n", command_line.explain(e).c_str());
  };
  try {
    return command_line.run();
  } catch (const vgpu::ConfigurationError& e) {
    report(e);
    return 2;
  } catch (const std::exception& e) {  // out of memory, data, vgpu::CudaError among them
    report(e);
  }
  return 1;
}

// Leaves without the libraries' exit handlers. OpenBLAS's handler joins the worker threads it
// starts when it loads, and a worker that could not map its 128 MiB buffer then (the address
// space exhausted, under a tight ulimit -v) retries for ever, so exit() would never return, even
// after a clean refusal. mirrorlab never uses those workers (one BLAS thread per device thread),
// and nothing of its own needs tearing down at exit: the streams are flushed here. Sanitizer
// builds exit normally, for their leak and race checks at exit.
[[noreturn]] void leave(int status) {
  std::fflush(nullptr);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  std::exit(status);
#else
  std::_Exit(status);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  mirrorlab::app::CommandLine command_line;
  if (const int status = command_line.parse(argc, argv); status >= 0) {
    leave(mirrorlab::app::finish_stdout(status));
  }
  mirrorlab::app::install_interrupt_handlers();
  leave(mirrorlab::app::finish_stdout(run(command_line)));
}
