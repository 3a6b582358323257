// A small file read whole, with a bound: configuration, PEM and rules files. A path that is a
// directory, a device that never ends (/dev/zero) or a file past the bound is an error that
// says so, never an exception or memory without end.
#ifndef SLUICE_BASE_SMALL_FILE_H_
#define SLUICE_BASE_SMALL_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace sluice {

// The bytes of the file at `path`, at most `max_bytes` of them. `what` names the file in the
// errors ("the tenants file"). NotFound where there is no such file, PermissionDenied where
// it may not be read, InvalidArgument for a directory or a file of more than `max_bytes`
// bytes, DataLoss where reading it fails.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes,
                                          std::string_view what);

// A PEM file (certificates, or a key) at `path`, as ReadSmallFile reads it: at most
// kMaxPemFileBytes, and not empty. Every error is InvalidArgument (the file is a flag's).
inline constexpr uint64_t kMaxPemFileBytes = uint64_t{4} << 20;
absl::StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view what);

}  // namespace sluice

#endif  // SLUICE_BASE_SMALL_FILE_H_
