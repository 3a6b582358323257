#include "sluice/tools/cancel_on_signal.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace sluice {
namespace {

// The guard's pipe and how many signals came, for the handler.
std::atomic<int> signal_pipe{-1};
std::atomic<int> signals_seen{0};

constexpr char kSignalled = 's';
constexpr char kStop = 'x';

}  // namespace

void CancelOnSignal::Handle(int) {
  if (signals_seen.fetch_add(1) > 0) _exit(kExitInterrupted);
  const int fd = signal_pipe.load();
  if (fd >= 0) {
    const char byte = kSignalled;
    [[maybe_unused]] const ssize_t n = write(fd, &byte, 1);
  }
}

CancelOnSignal::CancelOnSignal(ResidentDispatch* dispatch) : dispatch_(dispatch) {
  if (pipe2(pipe_, O_CLOEXEC) != 0) return;  // no pipe: signals keep their default
  signals_seen.store(0);
  signal_pipe.store(pipe_[1]);
  struct sigaction action {};
  action.sa_handler = &CancelOnSignal::Handle;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
  watcher_ = std::thread([this] { Watch(); });
}

CancelOnSignal::~CancelOnSignal() {
  if (!watcher_.joinable()) return;
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  signal_pipe.store(-1);
  const char byte = kStop;
  [[maybe_unused]] const ssize_t n = write(pipe_[1], &byte, 1);
  watcher_.join();
  close(pipe_[0]);
  close(pipe_[1]);
}

void CancelOnSignal::Watch() {
  pollfd fd{.fd = pipe_[0], .events = POLLIN, .revents = 0};
  while (true) {
    // Until a signal, wait for one; after it, cancel again every 10 ms.
    const int ready = poll(&fd, 1, interrupted_.load() ? 10 : -1);
    if (ready > 0) {
      char byte = 0;
      if (read(pipe_[0], &byte, 1) == 1) {
        if (byte == kStop) return;
        interrupted_.store(true);
      }
    }
    if (interrupted_.load()) dispatch_->Cancel();
  }
}

}  // namespace sluice
