#include "base/log.h"

#include <unistd.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace sluice {
namespace {

absl::Mutex tag_mu(absl::kConstInit);
std::string* tag ABSL_GUARDED_BY(tag_mu) = nullptr;

}  // namespace

void SetLogTag(const std::string& new_tag) {
  absl::MutexLock lock(&tag_mu);
  delete tag;
  tag = new std::string(new_tag);
}

void LogLine(const std::string& message) {
  std::string line = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ ", absl::Now(), absl::UTCTimeZone());
  {
    absl::MutexLock lock(&tag_mu);
    line += tag == nullptr ? "sluice" : *tag;
  }
  line += ": ";
  line += message;
  line += '\n';
  // One write(2) per line keeps lines whole when several threads log at once.
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (n <= 0) return;
    written += static_cast<size_t>(n);
  }
}

}  // namespace sluice
