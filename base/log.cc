#include "sluice/base/log.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace sluice {
namespace {

absl::Mutex tag_mu(absl::kConstInit);
std::string* tag ABSL_GUARDED_BY(tag_mu) = nullptr;

thread_local LogFields* t_context = nullptr;
std::atomic<LogFormat> log_format{LogFormat::kText};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

// `over`'s fields where it has them, else `under`'s.
LogFields Merge(const LogFields& over, const LogFields* under) {
  if (under == nullptr) return over;
  LogFields merged = over;
  for (auto [field, fallback] : {std::pair{&merged.session, &under->session},
                                 std::pair{&merged.peer, &under->peer},
                                 std::pair{&merged.client, &under->client},
                                 std::pair{&merged.tenant, &under->tenant}}) {
    if (field->empty()) *field = *fallback;
  }
  return merged;
}

constexpr size_t kMaxLimitedKeys = 4096;

}  // namespace

LogContext::LogContext(LogFields fields)
    : previous_(std::exchange(t_context, new LogFields(std::move(fields)))) {}

LogFields LogContext::Current() { return t_context == nullptr ? LogFields{} : *t_context; }

LogContext::~LogContext() { delete std::exchange(t_context, previous_); }

bool AbslParseFlag(absl::string_view text, LogFormat* format, std::string* error) {
  if (text == "text") {
    *format = LogFormat::kText;
  } else if (text == "json") {
    *format = LogFormat::kJson;
  } else {
    *error = "the log format is text or json";
    return false;
  }
  return true;
}

std::string AbslUnparseFlag(LogFormat format) {
  return format == LogFormat::kJson ? "json" : "text";
}

void SetLogFormat(LogFormat format) { log_format.store(format); }

std::string FormatLogLine(LogFormat format, absl::Time time, LogLevel level,
                          const std::string& tag, const LogFields& fields,
                          const std::string& message) {
  const std::string when = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone());
  if (format == LogFormat::kJson) {
    nlohmann::ordered_json line = {
        {"time", when}, {"level", LevelName(level)}, {"program", tag}};
    for (auto [key, value] : {std::pair{"session", &fields.session},
                              std::pair{"peer", &fields.peer},
                              std::pair{"client", &fields.client},
                              std::pair{"tenant", &fields.tenant}}) {
      if (!value->empty()) line[key] = *value;
    }
    line["message"] = message;
    // Bytes that are not UTF-8 (a client's name is checked, but a library's message may not
    // be) are replaced, never a reason to lose the line.
    return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string text = absl::StrCat(when, " ", tag, ": ");
  if (!fields.peer.empty()) absl::StrAppend(&text, "[", fields.peer, "] ");
  if (level != LogLevel::kInfo) absl::StrAppend(&text, LevelName(level), ": ");
  absl::StrAppend(&text, message);
  return text;
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

void LogLimited(const std::string& key, const std::string& message, const LogFields& fields,
                LogLevel level) {
  static LogRateLimiter* const limiter = new LogRateLimiter();  // process-wide, never destroyed
  uint64_t dropped = 0;
  if (!limiter->Admit(key, absl::Now(), &dropped)) return;
  if (dropped == 0) {
    LogLine(message, level, fields);
  } else {
    LogLine(absl::StrFormat("%s (and %d more lines from %s before it, too many to log)", message,
                            dropped, key),
            level, fields);
  }
}

void SetLogTag(const std::string& new_tag) {
  absl::MutexLock lock(&tag_mu);
  delete tag;
  tag = new std::string(new_tag);
}

void LogLine(const std::string& message, LogLevel level, const LogFields& fields) {
  std::string tag_now;
  {
    absl::MutexLock lock(&tag_mu);
    tag_now = tag == nullptr ? "sluice" : *tag;
  }
  std::string line = FormatLogLine(log_format.load(), absl::Now(), level, tag_now,
                                   Merge(fields, t_context), message);
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
