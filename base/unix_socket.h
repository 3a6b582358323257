// Unix domain sockets: claiming a path to listen on, and passing a file descriptor.
#ifndef SLUICE_BASE_UNIX_SOCKET_H_
#define SLUICE_BASE_UNIX_SOCKET_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice {

// The mode the daemon gives its Unix sockets: its own user and group may connect.
inline constexpr unsigned kUnixSocketMode = 0660;

// Makes `path` free for a new socket: nothing there, or a socket nobody listens on any more
// (left by a process that died), which goes. InvalidArgument for a path that does not fit a
// socket address; FailedPrecondition for something there that is no socket; Unavailable when a
// process listens on it.
absl::Status ClaimUnixSocketPath(const std::string& path);

// Binds a new socket at `path` (claimed beforehand: see ClaimUnixSocketPath), gives it `mode`
// before anyone can connect, and listens with `backlog`; `flags` are socket(2)'s type flags
// (SOCK_CLOEXEC, SOCK_NONBLOCK). Returns the listening descriptor (the caller closes it), or
// InvalidArgument for a path that does not fit, Unavailable saying why it could not listen.
absl::StatusOr<int> ListenUnixSocket(const std::string& path, unsigned mode, int backlog,
                                     int flags);

// Waits until `listener` has a connection to accept (true), or until `stop` (the read end of
// a pipe that is written to stop) is readable or waiting fails (false). For accept loops.
bool AwaitConnection(int listener, int stop);

// Connects to the socket at `path`, waiting at most `timeout` for each later send and receive
// on it. Returns the connected descriptor (the caller closes it), or Unavailable saying why.
absl::StatusOr<int> ConnectUnixSocket(const std::string& path, absl::Duration timeout);

// Sends `bytes` on the connected Unix socket `socket` in one message, with the file descriptor
// `fd` attached (SCM_RIGHTS) unless it is negative. Unavailable, saying why, unless all of it
// went.
absl::Status SendWithDescriptor(int socket, std::string_view bytes, int fd);

}  // namespace sluice

#endif  // SLUICE_BASE_UNIX_SOCKET_H_
