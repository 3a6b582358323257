// A running Sluice gRPC server over one device: the Sluice service, the standard health
// service and server reflection, on one listening address. main.cc builds one from flags;
// benchmarks build one in-process.
#ifndef SLUICE_SERVER_GRPC_DAEMON_H_
#define SLUICE_SERVER_GRPC_DAEMON_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "sluice/base/executor.h"
#include "sluice/engine/device.h"
#include "sluice/engine/session_manager.h"
#include "sluice/server/grpc/peer_identity.h"
#include "sluice/server/grpc/service.h"
#include "sluice/server/metrics.h"
#include "sluice/server/shared_memory.h"

namespace sluice {

// Whether `host` (of host:port) names this machine's loopback interface only: 127.0.0.0/8,
// ::1 or localhost.
bool IsLoopbackHost(std::string_view host);

// The filesystem path of a Unix socket address ("unix:PATH" or "unix:///ABSOLUTE"); nullopt
// for any other address.
std::optional<std::string> UnixSocketPath(std::string_view listen);
// Whether `listen` reaches this machine only: a loopback host:port, or a Unix socket.
bool IsLocalAddress(std::string_view listen);

// The most threads the daemon starts for session work, whatever --max_sessions says.
inline constexpr uint64_t kMaxExecutorThreads = 4096;

// Transport security: TLS with the daemon's certificate, and mutual TLS when a client CA is
// given (every client must then present a certificate that CA signed). PEM files.
struct TlsFiles {
  std::string cert;       // the daemon's certificate chain
  std::string key;        // its private key
  std::string client_ca;  // empty: clients are not asked for certificates
  bool enabled() const { return !cert.empty() || !key.empty() || !client_ca.empty(); }
};

struct DaemonOptions {
  // host:port to listen on; port 0 picks a free port (see Daemon::address()). Or a Unix
  // socket, unix:PATH (unix:///ABSOLUTE): created with kUnixSocketMode, refused while another
  // daemon listens on it (a socket left by one that died is replaced), removed at shutdown.
  // Without tenants (streams.tenants) only a local address (loopback or a Unix socket), unless
  // allow_unauthenticated.
  std::string listen = "127.0.0.1:7450";
  bool allow_unauthenticated = false;
  TlsFiles tls;
  // Most threads that run session work (device calls), started as needed; 0 means one per
  // session and a few more (sessions.max_sessions + 16, at most kMaxExecutorThreads).
  int executor_threads = 0;
  SessionManager::Options sessions;
  SluiceService::Options streams;  // timeouts, unopened streams (its metrics are the daemon's)
  // host:port to serve Prometheus metrics on (GET /metrics); port 0 picks a free port (see
  // Daemon::metrics_address()); empty: no metrics endpoint (the metrics are still counted).
  std::string metrics_listen;
  // host:port of a plaintext port that serves only gRPC's health service, for probes that
  // cannot speak TLS or send a token (Kubernetes' native gRPC probe) beside a TLS `listen`;
  // port 0 picks a free port (see Daemon::health_address()). Empty: none (the health service
  // is still served on `listen`).
  std::string health_listen;
  // On a Unix socket `listen`, the same-host data path too: a second socket, `listen`'s path
  // plus ".shm", on which sessions that ask attach shared memory (server/shared_memory.h), of
  // at most sessions.limits.max_request_bytes each.
  bool shared_memory = true;
};

class Daemon {
 public:
  // Starts serving. Unavailable if the address (or the metrics address) cannot be bound;
  // InvalidArgument for a malformed address or TLS files that cannot be read;
  // FailedPrecondition for an address other than loopback without tenants or
  // allow_unauthenticated.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(std::shared_ptr<Device> device,
                                                       const DaemonOptions& options);
  // Shuts down with no grace period if Shutdown was not called.
  ~Daemon();

  // The address actually bound, as host:port.
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  // Where the metrics are served, as host:port ("" without metrics_listen).
  const std::string& metrics_address() const { return metrics_address_; }
  Metrics& metrics() { return *metrics_; }
  // Where the health-only port is, as host:port ("" without health_listen).
  const std::string& health_address() const { return health_address_; }
  SessionManager& sessions() { return *manager_; }
  Device& device() { return *device_; }
  SluiceService& service() { return *service_; }

  // Drains: refuses new sessions at once (UNAVAILABLE, saying the daemon drains), marks the
  // health service NOT_SERVING, sends open sessions a DRAINING notice, lets them end on their
  // own for `grace`, then ends the rest with UNAVAILABLE saying why (a running repeated
  // sequence stops at its next iteration boundary), gives them kEndGrace to do so, cancels
  // whatever remains, and returns once every session has ended and freed its buffers.
  // Idempotent.
  void Shutdown(absl::Duration grace);

  // How long sessions ended at the end of a drain get to stop their work and say why, before
  // the server cancels them.
  static constexpr absl::Duration kEndGrace = absl::Seconds(2);

 private:
  Daemon() = default;
  // Serves the metrics on `listen` (host:port).
  absl::Status ServeMetrics(const std::string& listen);
  // Serves the health service alone, in plaintext, on `listen` (host:port).
  absl::Status ServeHealth(const std::string& listen);
  // Sets the health of the server and of the Sluice service, on every port.
  void SetServing(bool serving);

  std::shared_ptr<Device> device_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<SessionManager> manager_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<SluiceService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::Server> health_server_;  // health_listen's
  // Scraped until the daemon is destroyed (a drain shows), and gone before what it reads.
  std::shared_ptr<prometheus::Collectable> state_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string address_;
  std::string metrics_address_;
  std::string health_address_;
  int port_ = 0;
  // A Unix socket's path and inode, removed at shutdown if it is still this daemon's.
  std::string unix_path_;
  uint64_t unix_inode_ = 0;
  std::unique_ptr<SharedRegions> shared_regions_;  // on a Unix socket, unless turned off
  // On a Unix socket without TLS: the daemon's own listener, and the peers it accepted.
  std::unique_ptr<UnixPeers> unix_peers_;
  std::unique_ptr<UnixListener> unix_listener_;

  bool shut_down_ = false;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_DAEMON_H_
