// One-line operational log records on stderr, as text ("2026-11-29T16:20:00.123Z sluiced:
// message") or as JSON objects, one a line (LogFormat).
#ifndef SLUICE_BASE_LOG_H_
#define SLUICE_BASE_LOG_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace sluice {

// Severity of a line: most are kInfo (what the daemon did); kWarning is a client's or an
// operator's mistake the daemon refused or survived; kError is the daemon's or the device's own
// failure.
enum class LogLevel { kInfo, kWarning, kError };

// How lines are written: kText, "2026-11-29T16:20:00.123Z sluiced: [peer] message" (a level
// other than info is said before the message); kJson, one JSON object a line with the keys
// time, level, program, message and, when known, session, peer, client and tenant.
enum class LogFormat { kText, kJson };
// For --log_format: "text" or "json".
bool AbslParseFlag(absl::string_view text, LogFormat* format, std::string* error);
std::string AbslUnparseFlag(LogFormat format);
// Sets the format of every later line (default kText). Thread-safe.
void SetLogFormat(LogFormat format);

// Who a line is about; empty fields are left out. Never a token or a buffer's contents.
struct LogFields {
  std::string session;  // the session's id
  std::string peer;     // the client's address, "ipv4:10.0.0.7:51234"
  std::string client;   // the client's name (its OpenRequest.client_name)
  std::string tenant;   // the tenant it authenticated as
};

// One line as `format` writes it, without the newline (for tests and for LogLine).
std::string FormatLogLine(LogFormat format, absl::Time time, LogLevel level,
                          const std::string& tag, const LogFields& fields,
                          const std::string& message);

// Writes one line (a timestamp, the program tag, the level, `fields` over the calling thread's
// LogContext, and `message`) atomically to stderr. Thread-safe.
void LogLine(const std::string& message, LogLevel level = LogLevel::kInfo,
             const LogFields& fields = {});

template <typename... Args>
void Log(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogLine(absl::StrFormat(format, args...));
}
template <typename... Args>
void LogWarning(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogLine(absl::StrFormat(format, args...), LogLevel::kWarning);
}
template <typename... Args>
void LogError(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogLine(absl::StrFormat(format, args...), LogLevel::kError);
}

// Sets the tag printed after the timestamp (default "sluice").
void SetLogTag(const std::string& tag);

// Names what the calling thread works for (a client, a session) while it lives: lines logged
// meanwhile carry its fields (the text format says the peer: "[ipv4:10.0.0.7:5000] ..."),
// whoever logs them (a library's handler too).
class LogContext {
 public:
  // The calling thread's context (empty fields when none).
  static LogFields Current();

  explicit LogContext(LogFields fields);
  ~LogContext();
  LogContext(const LogContext&) = delete;
  LogContext& operator=(const LogContext&) = delete;

 private:
  LogFields* previous_;
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
void LogLimited(const std::string& key, const std::string& message, const LogFields& fields = {},
                LogLevel level = LogLevel::kInfo);

}  // namespace sluice

#endif  // SLUICE_BASE_LOG_H_
