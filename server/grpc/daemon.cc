#include "sluice/server/grpc/daemon.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "sluice/base/heap.h"
#include "sluice/base/small_file.h"
#include "sluice/base/status_macros.h"
#include "sluice/base/unix_socket.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/server/grpc/daemon_metrics.h"
#include "sluice/server/grpc/session_reactor.h"

namespace sluice {
namespace {

// Whether `listen` is HOST:PORT, PORT a number from 0 (any free port) to 65535: gRPC would take
// 99999 as 34463, and "abc" as a failure to listen.
bool IsHostPort(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  const std::string_view port = std::string_view(listen).substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  return std::stoul(std::string(port)) <= 65535;
}

// A server that takes its port alone: gRPC's default (SO_REUSEPORT) would let a second daemon
// listen on a port that one already serves, and split the clients between them.
void ListenAlone(grpc::ServerBuilder* builder) {
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

// Checks what gRPC would refuse only as a failure to listen ("in use, or not a local
// address"): that the certificate and the key are PEM, and that the key is the certificate's.
absl::Status CheckKeyPair(const std::string& cert_pem, const std::string& key_pem,
                          const TlsFiles& tls) {
  const auto bio = [](const std::string& pem) {
    return std::unique_ptr<BIO, decltype(&BIO_free)>(
        BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  };
  const auto cert_bio = bio(cert_pem);
  const std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr), &X509_free);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--tls_cert %s holds no PEM certificate", tls.cert));
  }
  const auto key_bio = bio(key_pem);
  // No passphrase callback: an encrypted key is refused here, where gRPC could not read it.
  const auto no_passphrase = [](char*, int, int, void*) { return 0; };
  const std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, no_passphrase, nullptr), &EVP_PKEY_free);
  ERR_clear_error();
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--tls_key %s holds no PEM private key (or one a passphrase locks)", tls.key));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrFormat(
        "the key --tls_key %s is not the key of the certificate --tls_cert %s", tls.key,
        tls.cert));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  if (tls.cert.empty() || tls.key.empty()) {
    return absl::InvalidArgumentError("TLS needs both --tls_cert and --tls_key");
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.cert_chain, ReadPemFile(tls.cert, "the certificate (--tls_cert)"));
  ASSIGN_OR_RETURN(pair.private_key, ReadPemFile(tls.key, "the private key (--tls_key)"));
  RETURN_IF_ERROR(CheckKeyPair(pair.cert_chain, pair.private_key, tls));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!tls.client_ca.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs,
                     ReadPemFile(tls.client_ca, "the client CA certificates (--tls_client_ca)"));
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

std::optional<std::string> UnixSocketPath(std::string_view listen) {
  absl::string_view rest(listen.data(), listen.size());
  if (!absl::ConsumePrefix(&rest, "unix:")) return std::nullopt;
  absl::ConsumePrefix(&rest, "//");  // unix:///abs is unix: + an empty authority + /abs
  return std::string(rest);
}

bool IsLocalAddress(std::string_view listen) {
  if (UnixSocketPath(listen).has_value()) return true;
  const size_t colon = listen.rfind(':');
  return colon != std::string_view::npos && IsLoopbackHost(listen.substr(0, colon));
}

bool IsLoopbackHost(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") return true;
  const std::string text(host);
  in_addr v4;
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

absl::Status Daemon::ServeMetrics(const std::string& listen) {
  if (!IsHostPort(listen)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "metrics address \"%s\" is not host:port (a port from 0 to 65535)", listen));
  }
  const size_t colon = listen.rfind(':');
  // civetweb takes IPv6 hosts in brackets too, and port 0 for a free port.
  std::string host = listen.substr(0, colon);
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listen, "num_threads", "2"});
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot serve metrics on %s (in use, or not a local address): %s", listen, e.what()));
  }
  const std::vector<int> ports = exposer_->GetListeningPorts();
  if (ports.empty()) {
    exposer_.reset();
    return absl::UnavailableError(absl::StrFormat("cannot serve metrics on %s", listen));
  }
  state_ = std::make_shared<DaemonStateCollector>(manager_.get(), service_.get());
  exposer_->RegisterCollectable(metrics_->registry());
  exposer_->RegisterCollectable(state_);
  metrics_address_ = absl::StrFormat("%s:%d", host, ports.front());
  return absl::OkStatus();
}

absl::Status Daemon::ServeHealth(const std::string& listen) {
  if (!IsHostPort(listen)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "health address \"%s\" is not host:port (a port from 0 to 65535)", listen));
  }
  const size_t colon = listen.rfind(':');
  // A server of no service of its own: gRPC's default health service is all it has (it holds
  // no secret and takes no token, so plaintext on any address is safe).
  grpc::ServerBuilder builder;
  ListenAlone(&builder);
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  health_server_ = builder.BuildAndStart();
  if (health_server_ == nullptr || port == 0) {
    health_server_.reset();
    return absl::UnavailableError(absl::StrFormat(
        "cannot serve health checks on %s (in use, or not a local address)", listen));
  }
  health_address_ = absl::StrFormat("%s:%d", listen.substr(0, colon), port);
  return absl::OkStatus();
}

void Daemon::SetServing(bool serving) {
  for (grpc::Server* server : {server_.get(), health_server_.get()}) {
    if (server == nullptr) continue;
    if (grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService()) {
      health->SetServingStatus(serving);
      health->SetServingStatus(v1::Sluice::service_full_name(), serving);
    }
  }
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(std::shared_ptr<Device> device,
                                                      const DaemonOptions& options) {
  const std::optional<std::string> unix_path = UnixSocketPath(options.listen);
  if (unix_path.has_value()) {
    RETURN_IF_ERROR(ClaimUnixSocketPath(*unix_path));
  } else if (!IsHostPort(options.listen)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "listen address \"%s\" is not host:port (a port from 0 to 65535) or unix:PATH",
        options.listen));
  }
  const size_t colon = options.listen.rfind(':');
  if (options.streams.tenants == nullptr && !options.allow_unauthenticated &&
      !IsLocalAddress(options.listen)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "without --tenants_file the daemon serves only loopback (it would serve anyone who can "
        "reach %s): give --tenants_file, or --allow_unauthenticated to mean it",
        options.listen));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   ServerCredentials(options.tls));
  std::unique_ptr<Daemon> daemon(new Daemon());
  daemon->device_ = std::move(device);
  daemon->metrics_ = std::make_unique<Metrics>();
  daemon->manager_ = std::make_unique<SessionManager>(daemon->device_, options.sessions);
  // A thread per session (a session runs one job at a time), started as sessions need them:
  // no session's work waits behind another's long window for a thread. A few more serve the
  // opens that a full daemon refuses and the teardown of sessions that ended.
  const int threads =
      options.executor_threads > 0
          ? options.executor_threads
          : static_cast<int>(std::min<uint64_t>(uint64_t{options.sessions.max_sessions} + 16,
                                                kMaxExecutorThreads));
  daemon->executor_ = std::make_unique<Executor>(threads);
  SluiceService::Options streams = options.streams;
  streams.metrics = daemon->metrics_.get();
  // On a Unix socket without TLS the daemon accepts connections itself, so that it knows the
  // user behind each (SO_PEERCRED) before gRPC serves it; with TLS, gRPC listens and every
  // client there is the host "unix".
  const bool own_unix_listener = unix_path.has_value() && options.tls.cert.empty();
  if (own_unix_listener) {
    daemon->unix_peers_ = std::make_unique<UnixPeers>();
    streams.unix_peers = daemon->unix_peers_.get();
  }
  if (unix_path.has_value() && options.shared_memory) {
    absl::StatusOr<std::unique_ptr<SharedRegions>> regions = SharedRegions::Listen(
        *unix_path + ".shm", daemon->manager_->options().limits.max_request_bytes);
    if (!regions.ok()) {
      return absl::Status(regions.status().code(),
                          absl::StrCat("the shared-memory socket (--shared_memory=false serves "
                                       "without it): ",
                                       regions.status().message()));
    }
    daemon->shared_regions_ = *std::move(regions);
    streams.shared_regions = daemon->shared_regions_.get();
  }
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  const uint64_t host_bytes = PhysicalMemoryBytes();
  auto bytes = [](uint64_t n) {
    const double d = static_cast<double>(n);
    return n >= (uint64_t{1} << 30) ? absl::StrFormat("%.1f GiB", d / (1 << 30))
                                    : absl::StrFormat("%.1f MiB", d / (1 << 20));
  };
  if (streams.grpc_memory == 0) {
    streams.grpc_memory = std::clamp<uint64_t>(host_bytes / 16, 256 * kMiB, 1024 * kMiB);
  }
  // Everything the daemon may hold for its clients, part by part: it must fit the host.
  v1::HostMemory& bound = streams.host_memory;
  bound.set_transfers(TransferBudget::ChargedBound(daemon->manager_->transfers().limit()));
  bound.set_grpc(streams.grpc_memory);
  bound.set_unopened_streams(uint64_t{std::max<uint32_t>(streams.max_unopened_streams, 1)} *
                             StreamBounds::kUnopenedStreamBytes);
  bound.set_past_shares(uint64_t{daemon->manager_->options().max_sessions} *
                        StreamBounds::kPastShareBytes);
  const Device::HostBytes device_host =
      daemon->device_->HostMemoryBound(daemon->manager_->options().max_sessions);
  bound.set_device_buffers(device_host.buffers);
  bound.set_device_staging(device_host.staging);
  bound.set_upload_blocks(daemon->manager_->upload_blocks().limit());
  bound.set_total(bound.transfers() + bound.grpc() + bound.unopened_streams() +
                  bound.past_shares() + bound.device_buffers() + bound.device_staging() +
                  bound.upload_blocks());
  bound.set_host(host_bytes);
  if (bound.total() > bound.host()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sluiced could hold %s of this host's %s for its clients: transfers %s "
        "(--max_transfer_bytes and an eighth), gRPC %s (--grpc_memory), unopened streams %s "
        "(--max_unopened_streams), sessions past their shares %s (--max_sessions), device "
        "buffers %s (--cpu_memory), pinned staging %s (--max_sessions, --cuda_pinned_reads), "
        "upload blocks kept warm %s (an eighth of --max_transfer_bytes); lower one of them",
        bytes(bound.total()), bytes(bound.host()), bytes(bound.transfers()),
        bytes(bound.grpc()), bytes(bound.unopened_streams()), bytes(bound.past_shares()),
        bytes(bound.device_buffers()), bytes(bound.device_staging()),
        bytes(bound.upload_blocks())));
  }
  daemon->service_ =
      std::make_unique<SluiceService>(daemon->manager_.get(), daemon->executor_.get(), streams);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  ListenAlone(&builder);
  if (!own_unix_listener) {
    builder.AddListeningPort(options.listen, credentials,
                             unix_path.has_value() ? nullptr : &daemon->port_);
  }
  builder.RegisterService(daemon->service_.get());
  grpc::ResourceQuota quota("sluiced");
  quota.Resize(static_cast<size_t>(streams.grpc_memory));
  builder.SetResourceQuota(quota);
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<uint64_t>(options.sessions.limits.max_message_bytes, 1 << 30)));
  // Keepalive: a connection quiet for 30 s is pinged, and dropped (its sessions ended, their
  // buffers freed) when its client has not answered within 60 s more: a client paused for up
  // to a minute keeps its sessions, a vanished host costs its buffers for at most 90 s. A
  // closed connection is noticed at once. Clients may ping every 5 s.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 60000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  daemon->server_ = builder.BuildAndStart();
  if (own_unix_listener) {
    if (daemon->server_ == nullptr) {
      return absl::UnavailableError(absl::StrFormat("cannot serve on %s", options.listen));
    }
    ASSIGN_OR_RETURN(daemon->unix_listener_,
                     UnixListener::Start(*unix_path, kUnixSocketMode, daemon->unix_peers_.get(),
                                         daemon->server_.get()));
    daemon->address_ = absl::StrCat(absl::StartsWith(*unix_path, "/") ? "unix://" : "unix:",
                                    *unix_path);
  } else if (unix_path.has_value()) {
    struct stat st;
    if (daemon->server_ == nullptr || lstat(unix_path->c_str(), &st) != 0) {
      return absl::UnavailableError(absl::StrFormat(
          "cannot listen on %s (does its directory exist, and may the daemon write there?)",
          options.listen));
    }
    daemon->unix_path_ = *unix_path;
    daemon->unix_inode_ = st.st_ino;
    // Who may connect is who may write the socket: the daemon's user and group.
    if (chmod(unix_path->c_str(), kUnixSocketMode) != 0) {
      return absl::UnavailableError(
          absl::StrFormat("cannot set the mode of the socket %s", *unix_path));
    }
    daemon->address_ = absl::StrCat(absl::StartsWith(*unix_path, "/") ? "unix://" : "unix:",
                                    *unix_path);
  } else {
    if (daemon->server_ == nullptr || daemon->port_ == 0) {
      return absl::UnavailableError(absl::StrFormat(
          "cannot listen on %s (in use, or not a local address)", options.listen));
    }
    daemon->address_ = absl::StrFormat("%s:%d", options.listen.substr(0, colon), daemon->port_);
    daemon->service_->SetPort(daemon->port_);
  }
  if (!options.health_listen.empty()) RETURN_IF_ERROR(daemon->ServeHealth(options.health_listen));
  if (!options.metrics_listen.empty()) RETURN_IF_ERROR(daemon->ServeMetrics(options.metrics_listen));
  // The health of the whole server ("") and of the Sluice service by name, for checkers that
  // ask for the service.
  daemon->SetServing(true);
  return daemon;
}

Daemon::~Daemon() { Shutdown(absl::ZeroDuration()); }

void Daemon::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  const absl::Time deadline = absl::Now() + grace;
  metrics_->Drained();
  // New sessions are refused at once, saying why; open ones are told until when they may run.
  manager_->BeginDrain(deadline);
  // Sessions waiting for their client cannot resume any more: they are freed now.
  if (service_ != nullptr) service_->resumable().DropAll();
  if (server_ == nullptr) {  // it never started (Start failed to listen)
    executor_.reset();
    return;
  }
  SetServing(false);
  // The server keeps accepting calls meanwhile, so that a new client hears why it is refused
  // instead of waiting to connect.
  if (!manager_->WaitUntilIdle(deadline)) {
    manager_->EndAll(absl::UnavailableError(absl::StrFormat(
        "sluiced is shutting down: its drain's grace period of %s ended before this session did; "
        "the session's buffers are freed",
        absl::FormatDuration(grace))));
    // Each ended session stops its running work at the next iteration boundary and finishes
    // its stream with that reason.
    manager_->WaitUntilIdle(absl::Now() + kEndGrace);
  }
  // What remains (streams that never opened, sessions whose work did not stop in time) is
  // cancelled now, and no connection is taken any more.
  if (unix_listener_ != nullptr) unix_listener_->Stop();
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  // The socket goes with the daemon, unless another has taken the path since.
  struct stat st;
  if (!unix_path_.empty() && lstat(unix_path_.c_str(), &st) == 0 && st.st_ino == unix_inode_) {
    unlink(unix_path_.c_str());
  }
  if (health_server_ != nullptr) {
    health_server_->Shutdown(std::chrono::system_clock::now());
    health_server_->Wait();
  }
  // Every reactor has finished; the executor runs what they left (the teardown of sessions,
  // freeing their buffers) and stops.
  executor_.reset();
  shared_regions_.reset();  // no session holds an offer any more
}

}  // namespace sluice
