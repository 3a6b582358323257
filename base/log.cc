#include "base/log.h"

#include <unistd.h>

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace sluice {
namespace {

absl::Mutex tag_mu(absl::kConstInit);
std::string* tag ABSL_GUARDED_BY(tag_mu) = nullptr;

thread_local std::string* t_context = nullptr;

constexpr size_t kMaxLimitedKeys = 4096;

}  // namespace

LogContext::LogContext(std::string context) {
  if (t_context != nullptr) previous_ = *t_context;
  delete t_context;
  t_context = new std::string(std::move(context));
}

std::string LogContext::Current() { return t_context == nullptr ? "" : *t_context; }

LogContext::~LogContext() {
  delete t_context;
  t_context = previous_.empty() ? nullptr : new std::string(std::move(previous_));
}

bool LogRateLimiter::Admit(const std::string& key, absl::Time now, uint64_t* dropped) {
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxLimitedKeys) buckets_.erase(buckets_.begin());
    it = buckets_.emplace(key, Bucket{.refilled = now}).first;
  }
  Bucket& b = it->second;
  b.tokens = std::min<double>(
      kLogBurst, b.tokens + absl::ToDoubleSeconds(now - b.refilled) * kLogPerSecond);
  b.refilled = now;
  if (b.tokens < 1) {
    ++b.dropped;
    return false;
  }
  b.tokens -= 1;
  *dropped = std::exchange(b.dropped, 0);
  return true;
}

void LogLimited(const std::string& key, const std::string& message) {
  static LogRateLimiter* const limiter = new LogRateLimiter();  // process-wide, never destroyed
  uint64_t dropped = 0;
  if (!limiter->Admit(key, absl::Now(), &dropped)) return;
  if (dropped == 0) {
    LogLine(message);
  } else {
    LogLine(absl::StrFormat("%s (and %d more lines from %s before it, too many to log)", message,
                            dropped, key));
  }
}

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
  if (t_context != nullptr) {
    line += "[";
    line += *t_context;
    line += "] ";
  }
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
