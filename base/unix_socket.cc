#include "sluice/base/unix_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"

namespace sluice {
namespace {

absl::StatusOr<sockaddr_un> AddressOf(const std::string& path) {
  sockaddr_un address{};
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the Unix socket path \"%s\" must have 1 to %d bytes", path,
        sizeof(address.sun_path) - 1));
  }
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, path.size());
  return address;
}

}  // namespace

absl::StatusOr<int> ConnectUnixSocket(const std::string& path, absl::Duration timeout) {
  absl::StatusOr<sockaddr_un> address = AddressOf(path);
  if (!address.ok()) return address.status();
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrFormat("socket: %s", std::strerror(errno)));
  const timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof(*address)) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrFormat("cannot connect to %s: %s", path, std::strerror(error)));
  }
  return fd;
}

absl::StatusOr<int> ListenUnixSocket(const std::string& path, unsigned mode, int backlog,
                                     int flags) {
  absl::StatusOr<sockaddr_un> address = AddressOf(path);
  if (!address.ok()) return address.status();
  const int fd = socket(AF_UNIX, SOCK_STREAM | flags, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrFormat("socket: %s", std::strerror(errno)));
  // Who may connect is who may write the socket: the mode is set before it listens.
  if (bind(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof(*address)) != 0 ||
      chmod(path.c_str(), mode) != 0 || listen(fd, backlog) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrFormat("cannot listen on %s: %s", path, std::strerror(error)));
  }
  return fd;
}

absl::Status SendWithDescriptor(int socket, std::string_view bytes, int fd) {
  iovec iov = {const_cast<char*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  if (fd >= 0) {
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&message);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  if (sendmsg(socket, &message, MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
    return absl::UnavailableError(absl::StrFormat("cannot send: %s", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status ClaimUnixSocketPath(const std::string& path) {
  absl::StatusOr<sockaddr_un> address = AddressOf(path);
  if (!address.ok()) return address.status();
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return absl::OkStatus();
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot listen on %s: it exists and is not a socket", path));
  }
  absl::StatusOr<int> probe = ConnectUnixSocket(path, absl::Seconds(1));
  if (probe.ok()) {
    close(*probe);
    return absl::UnavailableError(absl::StrFormat(
        "cannot listen on %s: another process listens on it (a daemon running already?)", path));
  }
  if (unlink(path.c_str()) != 0) {
    return absl::UnavailableError(
        absl::StrFormat("cannot listen on %s: cannot remove the stale socket there", path));
  }
  return absl::OkStatus();
}

bool AwaitConnection(int listener, int stop) {
  for (;;) {
    pollfd fds[2] = {{listener, POLLIN, 0}, {stop, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (fds[1].revents != 0) return false;
    if ((fds[0].revents & POLLIN) != 0) return true;
  }
}

}  // namespace sluice
