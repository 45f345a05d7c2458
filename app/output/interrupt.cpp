#include "app/output/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

#include "core/io/output_file.h"

namespace mirrorlab::app {
namespace {

// Lock-free, so reading and writing it from a signal handler is safe.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

void say(const char* text) {
  // write(2) is async-signal-safe; stdio is not. Nothing to do if it fails.
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
}

extern "C" void on_signal(int signal) {
  int none = 0;
  if (!g_signal.compare_exchange_strong(none, signal)) {
    say("\nmirrorlab: second interrupt: stopping now, without saving\n");
    core::remove_temporary_files_signal_safe();  // the old files stay as they were
    ::_exit(128 + signal);
  }
  say(signal == SIGINT
          ? "\nmirrorlab: interrupted (Ctrl-C): finishing the step under way, then saving what "
            "the run has; press Ctrl-C again to stop at once\n"
          : "\nmirrorlab: terminated (SIGTERM): finishing the step under way, then saving what "
            "the run has\n");
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and waits in progress go on; the run checks the flag
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::signal(SIGXFSZ, SIG_IGN);
}

int interrupt_signal() { return g_signal.load(); }

const char* interrupt_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT (Ctrl-C)";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "a signal";
  }
}

}  // namespace mirrorlab::app
