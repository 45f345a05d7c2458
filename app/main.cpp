// mirrorlab: mirrored (synchronous data-parallel) training on virtual GPUs, for teaching.
#include <alloca.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "app/command_line.h"
#include "app/output/interrupt.h"
#include "app/output/output_files.h"
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

// OpenBLAS starts a thread per core when it loads, before main: mirrorlab never uses them (each
// device thread calls BLAS with one thread), and under a tight `ulimit -v` on a machine of many
// cores their stacks no longer fit: OpenBLAS then stops the process with SIGINT before any of
// our code has run (seen on a 16-core machine). OpenBLAS reads OPENBLAS_NUM_THREADS when it
// loads, and the environment cannot be changed for it from inside the process (libc's own
// initializer puts back the environment the process started with). So an executable's preinit
// function, which runs before every shared library's initializer, starts the program again at
// once with OPENBLAS_NUM_THREADS=1 added, where it is unset (where it is set, the user's choice
// stands): one more exec, and OpenBLAS starts no thread. Where the exec fails (no /proc, the
// binary replaced since) the program goes on as before.
bool names(const char* entry, const char* variable) {
  const std::size_t n = std::strlen(variable);
  return std::strncmp(entry, variable, n) == 0 && entry[n] == '=';
}

void one_blas_thread(int, char** argv, char** envp) {
  std::size_t n = 0;
  for (; envp != nullptr && envp[n] != nullptr; ++n) {
    if (names(envp[n], "OPENBLAS_NUM_THREADS")) return;
  }
  static char one[] = "OPENBLAS_NUM_THREADS=1";
  auto** env = static_cast<char**>(alloca((n + 2) * sizeof(char*)));
  for (std::size_t i = 0; i < n; ++i) env[i] = envp[i];
  env[n] = one;
  env[n + 1] = nullptr;
  // By its own path, not /proc/self/exe: the process keeps its name (ps, top, gdb).
  static char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  if (length <= 0) return;
  self[length] = '\0';
  execve(self, argv, env);
}
__attribute__((section(".preinit_array"),
               used)) void (*const kOneBlasThread)(int, char**, char**) = one_blas_thread;

}  // namespace

int main(int argc, char** argv) {
  try {
    mirrorlab::app::CommandLine command_line;
    if (const int status = command_line.parse(argc, argv); status >= 0) {
      leave(mirrorlab::app::finish_stdout(status));
    }
    mirrorlab::app::install_interrupt_handlers();
    leave(mirrorlab::app::finish_stdout(run(command_line)));
  } catch (const std::exception& e) {  // building the command line or parsing it: out of memory
    std::fflush(stdout);
    std::fprintf(stderr, "\nmirrorlab: error: %s (before the command started)\n", e.what());
    leave(1);
  }
}
