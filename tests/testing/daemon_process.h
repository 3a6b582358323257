// Starts the real sluiced binary as a child process on a free loopback port, for integration
// tests. Every wait is bounded; the daemon is stopped (SIGTERM, then SIGKILL) on destruction.
#ifndef SLUICE_TESTS_TESTING_DAEMON_PROCESS_H_
#define SLUICE_TESTS_TESTING_DAEMON_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::testing {

// Path of a program built alongside the tests (sluiced, sluice, helpers).
std::string BinaryPath(const std::string& name);

// Where a child's stderr goes.
enum class ChildStderr {
  kFile,        // a temp file (see ChildProcess::Stderr)
  kClosedPipe,  // a pipe nobody reads: closed at once, so every write fails with EPIPE
};

class ChildProcess {
 public:
  // Starts `argv[0]` with `argv`; stdout is a pipe (see ReadLine), stderr as `stderr_to` says.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(
      const std::vector<std::string>& argv, ChildStderr stderr_to = ChildStderr::kFile);
  // Kills the process if it still runs, and reaps it.
  ~ChildProcess();

  // Reads one line of stdout, waiting at most `timeout`. DeadlineExceeded, or Unavailable if
  // the process closed stdout.
  absl::StatusOr<std::string> ReadLine(absl::Duration timeout);
  // Reads stdout until the process closes it, waiting at most `timeout` in all.
  absl::StatusOr<std::string> ReadAll(absl::Duration timeout);
  // Waits at most `timeout` for the process to exit; returns the waitpid status.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  // Sends `signal` and waits at most `timeout` for the exit. Returns the exit status as
  // waitpid reports it. DeadlineExceeded if the process is still running.
  absl::StatusOr<int> SignalAndWait(int signal, absl::Duration timeout);
  // Everything the process wrote to stderr so far ("" when it went to a closed pipe).
  std::string Stderr() const;
  pid_t pid() const { return pid_; }

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdout_fd_ = -1;
  std::string stdout_buffer_;
  std::string stderr_path_;
  bool reaped_ = false;
};

// What a finished program printed and how it ended.
struct ProgramRun {
  int exit_code = -1;  // -1 if it did not exit normally in time
  std::string out;
  std::string err;
};

// Runs `argv` to completion (at most `timeout` in all) and collects its output.
ProgramRun RunProgram(const std::vector<std::string>& argv,
                      absl::Duration timeout = absl::Seconds(120));

class DaemonProcess {
 public:
  // Starts sluiced with --listen=127.0.0.1:0 and `flags`, and waits (at most 30 s) for its
  // "sluiced listening on HOST:PORT" line.
  static absl::StatusOr<std::unique_ptr<DaemonProcess>> Start(
      const std::vector<std::string>& flags = {}, ChildStderr stderr_to = ChildStderr::kFile);

  const std::string& address() const { return address_; }
  ChildProcess& process() { return *process_; }
  // The host:port its metrics are served on, as it logged them at start (started with
  // --metrics_listen); "" when it logged none.
  std::string metrics_address();

 private:
  std::unique_ptr<ChildProcess> process_;
  std::string address_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_DAEMON_PROCESS_H_
