// Who a connection comes from, as the kernel knows it. Without tenants a client is its peer:
// its host and the user id of the process that connected, whatever name it gives itself, so
// that no process takes more than one client's share by renaming itself or by opening more
// connections. The uid comes from the kernel's socket table for a loopback TCP connection and
// from SO_PEERCRED for a Unix connection the daemon accepted itself.
#ifndef SLUICE_SERVER_GRPC_PEER_IDENTITY_H_
#define SLUICE_SERVER_GRPC_PEER_IDENTITY_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace sluice {

// The kernel's tables of TCP sockets, as Linux shows them.
inline constexpr std::string_view kProcTcpTables[] = {"/proc/net/tcp", "/proc/net/tcp6"};

// The uid owning the client's end of the loopback TCP connection that gRPC names `peer`
// ("ipv4:127.0.0.1:PORT", "ipv6:[::1]:PORT", or with the brackets %-encoded) and whose other
// end is the daemon's port `server_port` (0: any): the row of `tables` whose local address is
// the peer's. nullopt when the peer is not a loopback TCP address or no row shows it (a client
// in another network namespace).
std::optional<uint32_t> LoopbackPeerUid(std::string_view peer, int server_port,
                                        const std::vector<std::string>& tables = {
                                            std::string(kProcTcpTables[0]),
                                            std::string(kProcTcpTables[1])});

// The peers of the Unix connections the daemon accepted itself (see UnixListener): gRPC names
// such a connection "fd:N", and this answers for it while it is open. Thread-safe.
class UnixPeers {
 public:
  // Records the uid behind connection `fd`, before gRPC may see it.
  void Accepted(int fd, uint32_t uid);
  // The uid of the peer gRPC names `peer` ("fd:N"), if it was accepted here.
  std::optional<uint32_t> UidOf(std::string_view peer) const;
  // Connections accepted so far.
  uint64_t accepted() const;

 private:
  mutable absl::Mutex mu_;
  // By descriptor: a descriptor's number names one open connection at a time, and each accept
  // records its own before gRPC may see it.
  absl::flat_hash_map<int, uint32_t> uids_ ABSL_GUARDED_BY(mu_);
  uint64_t accepted_ ABSL_GUARDED_BY(mu_) = 0;
};

// A Unix socket the daemon accepts connections on itself, so that it knows each one's peer
// (SO_PEERCRED, recorded in a UnixPeers) before handing it to gRPC.
class UnixListener {
 public:
  // Binds `path` (claimed beforehand), gives it `mode` before listening, and hands every
  // connection to `server` (started, and kept serving until Stop), its peer recorded in
  // `peers` (which must outlive the listener). Unavailable, saying why, when it cannot.
  static absl::StatusOr<std::unique_ptr<UnixListener>> Start(const std::string& path,
                                                             unsigned mode, UnixPeers* peers,
                                                             grpc::Server* server);
  ~UnixListener();  // Stop()
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // Accepts no more connections (those handed over stay gRPC's) and removes the socket, unless
  // another has taken its path since. Idempotent; not thread-safe.
  void Stop();

 private:
  UnixListener(std::string path, ino_t inode, int listener, int stop_read, int stop_write,
               UnixPeers* peers, grpc::Server* server);
  void Serve();

  const std::string path_;
  const ino_t inode_;
  const int listener_;
  const int stop_read_;
  const int stop_write_;
  UnixPeers* const peers_;
  grpc::Server* const server_;
  std::thread thread_;
  bool stopped_ = false;
};

// The client key of a peer without tenants: its host and the uid behind it ("127.0.0.1 uid
// 1000", "unix uid 1000"), or its host alone when the uid cannot be known.
std::string PeerClientKey(std::string_view peer, std::optional<uint32_t> uid);

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_PEER_IDENTITY_H_
