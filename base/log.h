// One-line operational log records on stderr: "2026-11-29T16:20:00.123Z sluiced: message".
#ifndef SLUICE_BASE_LOG_H_
#define SLUICE_BASE_LOG_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "absl/strings/str_format.h"

namespace sluice {

// Writes one line (a timestamp, the program tag and `message`) atomically to stderr.
// Thread-safe.
void LogLine(const std::string& message);

template <typename... Args>
void Log(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogLine(absl::StrFormat(format, args...));
}

// Sets the tag printed after the timestamp (default "sluice").
void SetLogTag(const std::string& tag);

// Names what the calling thread works for (a client, a session) while it lives: lines logged
// meanwhile say so ("[from ipv4:10.0.0.7] ..."), whoever logs them (a library's handler too).
class LogContext {
 public:
  // The calling thread's context ("" when none).
  static std::string Current();

  explicit LogContext(std::string context);
  ~LogContext();
  LogContext(const LogContext&) = delete;
  LogContext& operator=(const LogContext&) = delete;

 private:
  std::string previous_;
};

// How many lines each key (a client, say) may log: a burst of kLogBurst, then kLogPerSecond a
// second. Remembers a few thousand keys (forgetting some when full). Thread-safe.
inline constexpr int kLogBurst = 20;
inline constexpr int kLogPerSecond = 2;
class LogRateLimiter {
 public:
  // Whether a line keyed `key` may be logged at `now`; when it may, *dropped is how many were
  // not since the last one that was.
  bool Admit(const std::string& key, absl::Time now, uint64_t* dropped);

 private:
  struct Bucket {
    double tokens = kLogBurst;
    absl::Time refilled;
    uint64_t dropped = 0;
  };
  absl::Mutex mu_;
  std::map<std::string, Bucket> buckets_ ABSL_GUARDED_BY(mu_);
};

// Logs `message` if the process-wide limiter admits its key; the first line admitted after some
// were dropped says how many.
void LogLimited(const std::string& key, const std::string& message);

}  // namespace sluice

#endif  // SLUICE_BASE_LOG_H_
