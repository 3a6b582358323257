#include "sluice/server/grpc/peer_identity.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "grpcpp/server.h"
#include "grpcpp/server_posix.h"
#include "sluice/base/unix_socket.h"

namespace sluice {
namespace {

// An address as IPv6 bytes, IPv4 ones mapped (::ffff:a.b.c.d), and a port.
struct Endpoint {
  std::array<uint8_t, 16> address{};
  int port = 0;
};

std::array<uint8_t, 16> MappedV4(const uint8_t v4[4]) {
  std::array<uint8_t, 16> mapped{};
  mapped[10] = mapped[11] = 0xff;
  std::memcpy(mapped.data() + 12, v4, 4);
  return mapped;
}

bool IsLoopback(const std::array<uint8_t, 16>& a) {
  static constexpr std::array<uint8_t, 16> kV6Loopback = {0, 0, 0, 0, 0, 0, 0, 0,
                                                          0, 0, 0, 0, 0, 0, 0, 1};
  const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return a == kV6Loopback || (std::memcmp(a.data(), v4_prefix, 12) == 0 && a[12] == 127);
}

// gRPC's name of a TCP peer: "ipv4:HOST:PORT" or "ipv6:[HOST]:PORT" (newer gRPC %-encodes the
// brackets).
std::optional<Endpoint> ParseGrpcPeer(std::string_view name) {
  absl::string_view peer(name.data(), name.size());
  const bool v4 = absl::ConsumePrefix(&peer, "ipv4:");
  if (!v4 && !absl::ConsumePrefix(&peer, "ipv6:")) return std::nullopt;
  const std::string rest = absl::StrReplaceAll(peer, {{"%5B", "["}, {"%5D", "]"}, {"%5b", "["}, {"%5d", "]"}});
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  Endpoint e;
  if (!absl::SimpleAtoi(absl::string_view(rest).substr(colon + 1), &e.port)) return std::nullopt;
  std::string host = rest.substr(0, colon);
  if (!v4) {
    if (host.size() < 2 || host.front() != '[' || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
    const size_t zone = host.find('%');
    if (zone != std::string::npos) host.resize(zone);
  }
  uint8_t bytes[16];
  if (inet_pton(v4 ? AF_INET : AF_INET6, host.c_str(), bytes) != 1) return std::nullopt;
  if (v4) {
    e.address = MappedV4(bytes);
  } else {
    std::memcpy(e.address.data(), bytes, 16);
  }
  return e;
}

// A socket table's "HEXADDRESS:HEXPORT": the address as the kernel prints it, 32-bit words
// in the host's order.
std::optional<Endpoint> ParseTableEndpoint(std::string_view field) {
  const size_t colon = field.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view hex = field.substr(0, colon);
  if (hex.size() != 8 && hex.size() != 32) return std::nullopt;
  uint8_t bytes[16];
  for (size_t word = 0; word * 8 < hex.size(); ++word) {
    uint32_t value = 0;
    const char* first = hex.data() + word * 8;
    if (std::from_chars(first, first + 8, value, 16).ptr != first + 8) return std::nullopt;
    std::memcpy(bytes + word * 4, &value, 4);
  }
  Endpoint e;
  if (hex.size() == 8) {
    e.address = MappedV4(bytes);
  } else {
    std::memcpy(e.address.data(), bytes, 16);
  }
  const std::string_view port = field.substr(colon + 1);
  if (std::from_chars(port.data(), port.data() + port.size(), e.port, 16).ptr !=
      port.data() + port.size()) {
    return std::nullopt;
  }
  return e;
}

}  // namespace

std::optional<uint32_t> LoopbackPeerUid(std::string_view peer, int server_port,
                                        const std::vector<std::string>& tables) {
  const std::optional<Endpoint> client = ParseGrpcPeer(peer);
  if (!client.has_value() || !IsLoopback(client->address)) return std::nullopt;
  for (const std::string& table : tables) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
      const std::vector<absl::string_view> fields =
          absl::StrSplit(line, ' ', absl::SkipWhitespace());
      // Established connections only: a socket in TIME_WAIT has no owner (its uid shows 0).
      if (fields.size() < 8 || fields[3] != "01") continue;
      const std::optional<Endpoint> local =
          ParseTableEndpoint(std::string_view(fields[1].data(), fields[1].size()));
      if (!local.has_value() || local->port != client->port ||
          local->address != client->address) {
        continue;
      }
      const std::optional<Endpoint> remote =
          ParseTableEndpoint(std::string_view(fields[2].data(), fields[2].size()));
      if (!remote.has_value() || (server_port != 0 && remote->port != server_port)) continue;
      uint32_t uid = 0;
      if (absl::SimpleAtoi(fields[7], &uid)) return uid;
    }
  }
  return std::nullopt;
}

std::string PeerClientKey(std::string_view name, std::optional<uint32_t> uid) {
  const absl::string_view peer(name.data(), name.size());
  std::string host;
  if (absl::StartsWith(peer, "fd:") || absl::StartsWith(peer, "unix:")) {
    host = "unix";
  } else {
    const size_t colon = peer.rfind(':');
    host = std::string(colon == std::string_view::npos || colon < 5 ? peer
                                                                     : peer.substr(0, colon));
  }
  return uid.has_value() ? absl::StrFormat("%s uid %d", host, *uid) : host;
}

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Start(const std::string& path,
                                                                  unsigned mode,
                                                                  UnixPeers* peers,
                                                                  grpc::Server* server) {
  absl::StatusOr<int> listening =
      ListenUnixSocket(path, mode, SOMAXCONN, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (!listening.ok()) {
    return absl::Status(listening.status().code(),
                        absl::StrCat(listening.status().message(),
                                     " (does its directory exist, and may the daemon write there?)"));
  }
  const int listener = *listening;
  int stop[2] = {-1, -1};
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || pipe2(stop, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    close(listener);
    return absl::UnavailableError(absl::StrFormat("cannot listen on %s: %s", path, why));
  }
  std::unique_ptr<UnixListener> unix_listener(
      new UnixListener(path, st.st_ino, listener, stop[0], stop[1], peers, server));
  unix_listener->thread_ = std::thread([l = unix_listener.get()] { l->Serve(); });
  return unix_listener;
}

UnixListener::UnixListener(std::string path, ino_t inode, int listener, int stop_read,
                           int stop_write, UnixPeers* peers, grpc::Server* server)
    : path_(std::move(path)),
      inode_(inode),
      listener_(listener),
      stop_read_(stop_read),
      stop_write_(stop_write),
      peers_(peers),
      server_(server) {}

UnixListener::~UnixListener() { Stop(); }

void UnixListener::Stop() {
  if (stopped_) return;
  stopped_ = true;
  const char byte = 0;
  if (write(stop_write_, &byte, 1) < 0) {
    // The pipe is ours and empty: a write cannot fail but for a closed read end.
  }
  thread_.join();
  close(listener_);
  close(stop_read_);
  close(stop_write_);
  struct stat st;
  if (lstat(path_.c_str(), &st) == 0 && st.st_ino == inode_) unlink(path_.c_str());
}

void UnixListener::Serve() {
  while (AwaitConnection(listener_, stop_read_)) {
    const int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (connection < 0) {
      // Out of descriptors, say: the connection waits in the queue; try again shortly, or stop.
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
        pollfd stop = {stop_read_, POLLIN, 0};
        if (poll(&stop, 1, 10) > 0) return;
      }
      continue;
    }
    ucred peer{};
    socklen_t length = sizeof(peer);
    if (getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) {
      close(connection);  // Linux answers for every connected Unix socket
      continue;
    }
    peers_->Accepted(connection, peer.uid);
    grpc::AddInsecureChannelFromFd(server_, connection);  // gRPC owns it from here
  }
}

void UnixPeers::Accepted(int fd, uint32_t uid) {
  absl::MutexLock lock(&mu_);
  uids_[fd] = uid;
  ++accepted_;
}

std::optional<uint32_t> UnixPeers::UidOf(std::string_view name) const {
  absl::string_view peer(name.data(), name.size());
  int fd = -1;
  if (!absl::ConsumePrefix(&peer, "fd:") || !absl::SimpleAtoi(peer, &fd)) return std::nullopt;
  absl::MutexLock lock(&mu_);
  const auto it = uids_.find(fd);
  if (it == uids_.end()) return std::nullopt;
  return it->second;
}

uint64_t UnixPeers::accepted() const {
  absl::MutexLock lock(&mu_);
  return accepted_;
}

}  // namespace sluice
