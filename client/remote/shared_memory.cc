#include "sluice/client/remote/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "sluice/base/unix_socket.h"
#include "sluice/proto/contract.h"

namespace sluice {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Sends `token` with `fd` on `socket` and reads the daemon's one-line answer.
absl::Status SendRegion(int socket, const std::string& token, int fd) {
  if (absl::Status sent = SendWithDescriptor(socket, token, fd); !sent.ok()) {
    return absl::UnavailableError(
        absl::StrFormat("cannot send the shared memory: %s", sent.message()));
  }
  std::string answer;
  char buffer[256];
  while (answer.find('\n') == std::string::npos && answer.size() < 4096) {
    const ssize_t n = recv(socket, buffer, sizeof(buffer), 0);
    if (n <= 0) return absl::UnavailableError("the daemon did not answer the shared memory");
    answer.append(buffer, static_cast<size_t>(n));
  }
  absl::string_view line(answer);
  line = line.substr(0, line.find('\n'));
  if (line == "OK") return absl::OkStatus();
  int code = 0;
  if (absl::ConsumePrefix(&line, "ERR ")) {
    const size_t space = line.find(' ');
    if (absl::SimpleAtoi(line.substr(0, space), &code) && code > 0 && code <= 16) {
      return absl::Status(static_cast<absl::StatusCode>(code),
                          absl::StrFormat("the daemon refused the shared memory: %s",
                                          space == absl::string_view::npos
                                              ? ""
                                              : line.substr(space + 1)));
    }
  }
  return absl::InternalError("the daemon answered the shared memory with something else");
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedMemory>> SharedMemory::Attach(const std::string& socket,
                                                                   const std::string& token,
                                                                   uint64_t bytes,
                                                                   absl::Duration timeout) {
  if (token.size() != kSharedMemoryTokenBytes || bytes == 0) {
    return absl::InvalidArgumentError("not a shared memory offer");
  }
  Fd memory{memfd_create("sluice-shared", MFD_CLOEXEC | MFD_ALLOW_SEALING)};
  if (memory.fd < 0) {
    return absl::UnavailableError(absl::StrFormat("memfd_create: %s", std::strerror(errno)));
  }
  if (ftruncate(memory.fd, static_cast<off_t>(bytes)) != 0 ||
      fcntl(memory.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot make %d bytes of shared memory: %s", bytes, std::strerror(errno)));
  }
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memory.fd, 0);
  if (data == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot map %d bytes of shared memory: %s", bytes, std::strerror(errno)));
  }
  std::unique_ptr<SharedMemory> shared(new SharedMemory(static_cast<uint8_t*>(data), bytes));
  absl::StatusOr<int> connected = ConnectUnixSocket(socket, timeout);
  if (!connected.ok()) return connected.status();
  Fd connection{*connected};
  if (absl::Status sent = SendRegion(connection.fd, token, memory.fd); !sent.ok()) return sent;
  return shared;
}

SharedMemory::~SharedMemory() { munmap(data_, size_); }

std::optional<uint64_t> SharedMemory::OffsetOf(absl::Span<const uint8_t> piece) const {
  const auto at = reinterpret_cast<uintptr_t>(piece.data());
  const auto base = reinterpret_cast<uintptr_t>(data_);
  if (at < base || at - base > size_ || piece.size() > size_ - (at - base)) return std::nullopt;
  return at - base;
}

}  // namespace sluice
