// One-line operational log records on stderr: "2026-11-29T16:20:00.123Z sluiced: message".
#ifndef SLUICE_BASE_LOG_H_
#define SLUICE_BASE_LOG_H_

#include <string>

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

}  // namespace sluice

#endif  // SLUICE_BASE_LOG_H_
