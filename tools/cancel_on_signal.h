// Ctrl-C for the commands that solve: while a CancelOnSignal lives, SIGINT and SIGTERM cancel
// the dispatcher's calls in flight (the window running, on the device or on a daemon) instead
// of killing the process, so the command ends at once with the session closed properly; a
// second signal ends the process at once (exit 130).
#ifndef SLUICE_TOOLS_CANCEL_ON_SIGNAL_H_
#define SLUICE_TOOLS_CANCEL_ON_SIGNAL_H_

#include <signal.h>

#include <atomic>
#include <thread>

#include "sluice/client/resident_dispatch.h"

namespace sluice {

// 128 + SIGINT: what a shell reports for a command that Ctrl-C ended.
inline constexpr int kExitInterrupted = 130;

class CancelOnSignal {
 public:
  // `dispatch` must outlive the guard. One guard at a time in a process.
  explicit CancelOnSignal(ResidentDispatch* dispatch);
  // Restores the signals' earlier handlers.
  ~CancelOnSignal();
  CancelOnSignal(const CancelOnSignal&) = delete;
  CancelOnSignal& operator=(const CancelOnSignal&) = delete;

  // Whether a signal came: the calls that failed Cancelled since were cancelled by it.
  bool interrupted() const { return interrupted_.load(); }

 private:
  // The handler: writes one byte to the pipe (async-signal-safe); at the second signal, _exit.
  static void Handle(int signal);
  // The watcher thread: once a signal came, it cancels the calls in flight every 10 ms until
  // the guard ends, so that a window sent just after the first cancel is cancelled too.
  void Watch();

  ResidentDispatch* const dispatch_;
  int pipe_[2] = {-1, -1};
  std::atomic<bool> interrupted_{false};
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  std::thread watcher_;
};

}  // namespace sluice

#endif  // SLUICE_TOOLS_CANCEL_ON_SIGNAL_H_
