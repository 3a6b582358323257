#include "sluice/tools/output_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"

namespace sluice {

namespace {

// While it lives, SIGINT and SIGTERM stop an output at its next block rather than end the
// process in the middle of it (signalled()); a second signal ends the process at once, as a
// shell reports a signal's end (128 + its number).
class StopWritingOnSignal {
 public:
  StopWritingOnSignal() {
    signals_.store(0);
    struct sigaction action {};
    action.sa_handler = &Handle;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopWritingOnSignal() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopWritingOnSignal(const StopWritingOnSignal&) = delete;
  StopWritingOnSignal& operator=(const StopWritingOnSignal&) = delete;

  static bool signalled() { return signals_.load() > 0; }

 private:
  static void Handle(int signal) {
    if (signals_.fetch_add(1) > 0) _exit(128 + signal);
  }
  static inline std::atomic<int> signals_{0};  // lock-free: async-signal-safe
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace

absl::Status WriteToFile(
    const std::string& path,
    absl::FunctionRef<absl::Status(absl::FunctionRef<absl::Status(std::string_view)>)> write,
    uint64_t* bytes) {
  const std::string where = path.empty() ? "to stdout" : path;
  const auto failed = [&](int error) {
    return absl::UnavailableError(absl::StrCat("cannot write ", where, ": ", strerror(error)));
  };
  const int fd =
      path.empty() ? STDOUT_FILENO : open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return failed(errno);
  struct stat file;
  const bool regular = !path.empty() && fstat(fd, &file) == 0 && S_ISREG(file.st_mode);
  std::optional<StopWritingOnSignal> stop;
  if (regular) stop.emplace();
  *bytes = 0;
  const auto sink = [&](std::string_view block) {
    if (stop.has_value() && StopWritingOnSignal::signalled()) {
      return absl::CancelledError(absl::StrCat("interrupted while writing ", where,
                                               ": it holds the output's first ", *bytes,
                                               " bytes"));
    }
    while (!block.empty()) {
      const ssize_t n = ::write(fd, block.data(), block.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return failed(n < 0 ? errno : EIO);
      block.remove_prefix(static_cast<size_t>(n));
      *bytes += static_cast<uint64_t>(n);
    }
    return absl::OkStatus();
  };
  absl::Status status;
  try {
    status = write(sink);
  } catch (...) {
    if (regular) (void)ftruncate(fd, static_cast<off_t>(*bytes));
    if (!path.empty()) close(fd);
    throw;
  }
  if (regular && ftruncate(fd, static_cast<off_t>(*bytes)) != 0 && status.ok()) {
    status = failed(errno);
  }
  if (!path.empty() && close(fd) != 0 && status.ok()) status = failed(errno);
  return status;
}

}  // namespace sluice
