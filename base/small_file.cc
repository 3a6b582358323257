#include "sluice/base/small_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace sluice {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes,
                                          std::string_view what) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string why =
        absl::StrFormat("cannot read %s %s: %s", what, path, std::strerror(error));
    if (error == ENOENT || error == ENOTDIR) return absl::NotFoundError(why);
    if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(why);
    return absl::InvalidArgumentError(why);
  }
  struct stat info {};
  if (fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot read %s %s: it is a directory", what, path));
  }
  // Read to the end or one byte past the bound, whatever the file says its size is (a pipe
  // or a /proc file says 0).
  std::string text;
  for (;;) {
    const uint64_t room = max_bytes + 1 - text.size();
    if (room == 0) break;
    const size_t step = static_cast<size_t>(std::min<uint64_t>(room, uint64_t{1} << 16));
    const size_t at = text.size();
    text.resize(at + step);
    const ssize_t got = read(fd, text.data() + at, step);
    if (got < 0 && errno == EINTR) {
      text.resize(at);
      continue;
    }
    if (got < 0) {
      const int error = errno;
      close(fd);
      return absl::DataLossError(
          absl::StrFormat("cannot read %s %s: %s", what, path, std::strerror(error)));
    }
    text.resize(at + static_cast<size_t>(got));
    if (got == 0) break;
  }
  close(fd);
  if (text.size() > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s %s is larger than %d bytes", what, path, max_bytes));
  }
  return text;
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view what) {
  absl::StatusOr<std::string> text = ReadSmallFile(path, kMaxPemFileBytes, what);
  // A flag's file that cannot be read is the flag's fault, whatever the reason.
  if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
  if (text->empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s %s is empty (a PEM file is expected)", what, path));
  }
  return text;
}

}  // namespace sluice
