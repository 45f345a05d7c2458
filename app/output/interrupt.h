// Ctrl-C and SIGTERM, as users of long runs expect them: the first one asks the run to stop
// after the step under way (no replica is left in the middle of an all-reduce) and to save what
// it has (history, trace); a second one exits at once. The exit status is then 128 + the signal
// (130 for SIGINT, 143 for SIGTERM). SIGHUP (the terminal closed) is a SIGTERM, and SIGPIPE (the
// reader of the output went away: `| head`, or Ctrl-C taking `| tee` with it) stops the run as
// quietly as it can, saving what it has, rather than killing it with its files half written.
#pragma once

namespace mirrorlab::app {

// Installs the handlers (SIGINT, SIGTERM, SIGHUP, SIGPIPE) and ignores SIGXFSZ, so that a write
// past a file size limit fails with an error mirrorlab reports instead of killing the process.
void install_interrupt_handlers();

// For a command with nothing to save (a lesson played in the terminal, waiting for an answer):
// the first signal stops it at once, with 128 + the signal.
void stop_at_once_on_interrupt();

// The signal that asked the run to stop (SIGINT, SIGTERM, SIGHUP or SIGPIPE), or 0.
int interrupt_signal();
// "SIGINT (Ctrl-C)", "SIGTERM", "SIGHUP (its terminal closed)", ...
const char* interrupt_name(int signal);
// 128 + signal: the status a shell gives a process killed by it.
inline int interrupt_exit_status(int signal) { return 128 + signal; }

}  // namespace mirrorlab::app
