#include "tests/testing/daemon_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

extern char** environ;

namespace sluice::testing {
namespace {

int PollFor(int fd, absl::Time deadline) {
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    const int ms = left <= absl::ZeroDuration()
                       ? 0
                       : static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(left)));
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r;
  }
}

}  // namespace

std::string BinaryPath(const std::string& name) {
  return absl::StrFormat("%s/%s", SLUICE_BINARY_DIR, name);
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::vector<std::string>& argv, ChildStderr stderr_to) {
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
  int err_fd = -1;
  if (stderr_to == ChildStderr::kFile) {
    char path[] = "/tmp/sluice-test-stderr-XXXXXX";
    err_fd = ::mkstemp(path);
    if (err_fd < 0) return absl::InternalError("mkstemp failed");
    child->stderr_path_ = path;
  } else {
    int err[2];
    if (::pipe2(err, O_CLOEXEC) != 0) return absl::InternalError("pipe2 failed");
    ::close(err[0]);  // nobody will read it
    err_fd = err[1];
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = ::posix_spawn(&child->pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  ::close(err_fd);
  child->stdout_fd_ = out[0];
  if (rc != 0) {
    return absl::InternalError(absl::StrFormat("cannot start %s: %s", argv[0], strerror(rc)));
  }
  child->pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, child->pid_, 0));
  if (child->pidfd_ < 0) return absl::InternalError("pidfd_open failed");
  return child;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (pidfd_ >= 0) ::close(pidfd_);
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  if (!stderr_path_.empty()) ::unlink(stderr_path_.c_str());
}

absl::StatusOr<std::string> ChildProcess::ReadLine(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    const size_t newline = stdout_buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string line = stdout_buffer_.substr(0, newline);
      stdout_buffer_.erase(0, newline + 1);
      return line;
    }
    if (PollFor(stdout_fd_, deadline) == 0) {
      return absl::DeadlineExceededError("no line on the child's stdout in time");
    }
    char buffer[4096];
    const ssize_t n = ::read(stdout_fd_, buffer, sizeof(buffer));
    if (n <= 0) return absl::UnavailableError("the child closed its stdout");
    stdout_buffer_.append(buffer, static_cast<size_t>(n));
  }
}

absl::StatusOr<std::string> ChildProcess::ReadAll(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    if (PollFor(stdout_fd_, deadline) == 0) {
      return absl::DeadlineExceededError("the child kept its stdout open too long");
    }
    char buffer[4096];
    const ssize_t n = ::read(stdout_fd_, buffer, sizeof(buffer));
    if (n <= 0) break;
    stdout_buffer_.append(buffer, static_cast<size_t>(n));
  }
  return std::exchange(stdout_buffer_, std::string());
}

absl::StatusOr<int> ChildProcess::Wait(absl::Duration timeout) {
  return SignalAndWait(0, timeout);
}

absl::StatusOr<int> ChildProcess::SignalAndWait(int signal, absl::Duration timeout) {
  if (reaped_) return absl::FailedPreconditionError("the child was already reaped");
  if (signal != 0) ::kill(pid_, signal);
  // The pidfd becomes readable when the process exits.
  if (PollFor(pidfd_, absl::Now() + timeout) == 0) {
    return absl::DeadlineExceededError("the child did not exit in time");
  }
  int status = 0;
  ::waitpid(pid_, &status, 0);
  reaped_ = true;
  return status;
}

std::string ChildProcess::Stderr() const {
  if (stderr_path_.empty()) return "";
  std::ifstream in(stderr_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ProgramRun RunProgram(const std::vector<std::string>& argv, absl::Duration timeout) {
  ProgramRun run;
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn(argv);
  if (!child.ok()) {
    run.err = child.status().ToString();
    return run;
  }
  const absl::Time deadline = absl::Now() + timeout;
  absl::StatusOr<std::string> out = (*child)->ReadAll(timeout);
  absl::StatusOr<int> status = (*child)->Wait(std::max(deadline - absl::Now(), absl::Seconds(1)));
  run.out = out.ok() ? *out : "";
  run.err = (*child)->Stderr();
  run.exit_code = status.ok() && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  return run;
}

absl::StatusOr<std::unique_ptr<DaemonProcess>> DaemonProcess::Start(
    const std::vector<std::string>& flags, ChildStderr stderr_to) {
  std::vector<std::string> argv = {BinaryPath("sluiced"), "--listen=127.0.0.1:0"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::unique_ptr<DaemonProcess> daemon(new DaemonProcess());
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Spawn(argv, stderr_to);
  if (!child.ok()) return child.status();
  daemon->process_ = std::move(*child);
  absl::StatusOr<std::string> line = daemon->process_->ReadLine(absl::Seconds(30));
  constexpr absl::string_view kPrefix = "sluiced listening on ";
  if (!line.ok() || !absl::StartsWith(*line, kPrefix)) {
    return absl::InternalError(absl::StrFormat("sluiced did not start: %s\nstderr:\n%s",
                                               line.ok() ? *line : line.status().ToString(),
                                               daemon->process_->Stderr()));
  }
  daemon->address_ = line->substr(kPrefix.size());
  return daemon;
}

std::string DaemonProcess::metrics_address() {
  const std::string log = process_->Stderr();
  const std::string kMarker = "metrics on http://";
  const size_t at = log.find(kMarker);
  if (at == std::string::npos) return "";
  const size_t start = at + kMarker.size();
  return log.substr(start, log.find("/metrics", start) - start);
}

}  // namespace sluice::testing
