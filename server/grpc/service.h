// The sluice.v1.Sluice service: Session streams (one SessionReactor each) and GetInfo.
#ifndef SLUICE_SERVER_GRPC_SERVICE_H_
#define SLUICE_SERVER_GRPC_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "sluice/base/executor.h"
#include "sluice/engine/session_manager.h"
#include "sluice/server/grpc/peer_identity.h"
#include "sluice/server/grpc/resumable_sessions.h"
#include "sluice/server/grpc/session_reactor.h"
#include "sluice/server/grpc/stream_watch.h"
#include "sluice/server/tenants.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

// Session is served raw (ByteBuffers parsed by the reactor), GetInfo as a plain callback.
class SluiceService final
    : public v1::Sluice::WithRawCallbackMethod_Session<
          v1::Sluice::WithCallbackMethod_GetInfo<v1::Sluice::Service>> {
 public:
  struct Options {
    StreamTimeouts timeouts;
    // Streams that have not opened a session yet, at most (at least 1): when another arrives,
    // the one that has waited longest is ended (RESOURCE_EXHAUSTED).
    uint32_t max_unopened_streams = 64;
    // gRPC's resource quota: memory gRPC itself may use for all connections (read buffers,
    // messages in flight; a message is copied out of them as it is parsed). 0: a sixteenth of
    // the host's memory, within [256M, 1G]. Resolved by Daemon::Start.
    uint64_t grpc_memory = 0;
    // What the daemon may hold of its host's memory for its clients, part by part (GetInfo's
    // host_memory). Resolved by Daemon::Start from the rest.
    v1::HostMemory host_memory;
    // The tenants whose tokens the service takes (see TenantTable); null: no tenants, every
    // caller is served as the client its peer makes it (see PeerOf).
    std::shared_ptr<const TenantTable> tenants;
    // How long a resumable session waits for its client once its stream breaks (0: sessions
    // end with their stream).
    absl::Duration resume_grace = absl::Minutes(1);
    // Where the service counts what it serves (may be null: not counted). Must outlive it.
    Metrics* metrics = nullptr;
    // Where sessions that ask for shared memory attach it (null: none is offered). Must
    // outlive the service.
    SharedRegions* shared_regions = nullptr;
    // The peers of the Unix connections the daemon accepts itself (null: none; see
    // UnixListener). Must outlive the service.
    const UnixPeers* unix_peers = nullptr;
    // Called as each stream ends, once what it held is freed (sluiced pokes its HeapTrimmer,
    // so that the memory a burst of streams held goes back to the system). May be empty.
    std::function<void()> on_stream_end;
  };

  // Neither is owned; both must outlive the server.
  SluiceService(SessionManager* manager, Executor* executor, const Options& options);
  ~SluiceService() override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const v1::GetInfoRequest* request,
                                    v1::GetInfoResponse* response) override;

  // Streams that have not opened a session yet.
  uint32_t unopened_streams() const { return unopened_.size(); }
  const Options& options() const { return options_; }

  // Sessions that wait for their client to resume them.
  ResumableSessions& resumable() { return resumable_; }
  const ResumableSessions& resumable() const { return resumable_; }

  // The tenants now (null: none). Thread-safe.
  std::shared_ptr<const TenantTable> tenants() const ABSL_LOCKS_EXCLUDED(tenants_mu_);
  // Takes `tenants` (a reloaded file) for later calls, and ends the open sessions whose tenant
  // or token it no longer has (UNAUTHENTICATED, saying why); the others' tenants take their
  // new limits. Thread-safe.
  void SetTenants(std::shared_ptr<const TenantTable> tenants) ABSL_LOCKS_EXCLUDED(tenants_mu_);
  // Who a call is from: with tenants, the tenant whose bearer token its metadata carries
  // ("authorization: Bearer <token>"), or UNAUTHENTICATED; without tenants, nullopt.
  absl::StatusOr<std::optional<Principal>> Authenticate(
      const grpc::CallbackServerContext& context) const;
  // The client a call is from without tenants: its peer, as the host and the uid of the
  // process behind the connection (from the kernel's socket table for loopback TCP, from
  // SO_PEERCRED for a Unix connection the daemon accepted itself), or the host alone where
  // the kernel does not say. The name a client gives is only a label.
  Principal PeerOf(const grpc::CallbackServerContext& context) const;
  // The port the daemon serves on, once known (0 until then: a loopback peer is looked up by
  // its own address alone).
  void SetPort(int port) { port_.store(port); }

  // Calls (streams and GetInfo) refused for their credentials since the daemon started: with no
  // token, and with a token no tenant lists. Each refusal is also logged, rate-limited per
  // client host, never with the token. Thread-safe.
  struct AuthFailures {
    uint64_t no_token = 0;
    uint64_t unknown_token = 0;
  };
  AuthFailures auth_failures() const;

 private:
  // Counts and logs a refusal of `context`'s call.
  void Refused(const grpc::CallbackServerContext& context, bool had_token) const;

  SessionManager* const manager_;
  Executor* const executor_;
  const Options options_;
  UnopenedStreams unopened_{options_.max_unopened_streams};
  ResumableSessions resumable_{options_.resume_grace, executor_};
  mutable absl::Mutex tenants_mu_;
  std::shared_ptr<const TenantTable> tenants_ ABSL_GUARDED_BY(tenants_mu_) = options_.tenants;
  std::atomic<int> port_{0};
  mutable std::atomic<uint64_t> refused_without_token_{0};
  mutable std::atomic<uint64_t> refused_unknown_token_{0};
  // Gives back the upload blocks kept unused too long (SessionManager::ExpireUploadBlocks).
  struct UploadBlockExpiry final : StreamWatch::Watched {
    explicit UploadBlockExpiry(SessionManager* m) : manager(m) {}
    void Tick(absl::Time now) override { manager->ExpireUploadBlocks(now); }
    SessionManager* const manager;
  };
  UploadBlockExpiry upload_block_expiry_{manager_};
  // Last: their threads stop before the rest goes.
  StreamWatch watch_;
  RoomWatch room_watch_{absl::Milliseconds(5)};
};

// Describes the daemon: backend, device, memory, counters, sessions, streams, limits and
// catalog. For a tenant (`who` with a tenant), its own use and limits, and nothing of the
// others' work (see GetInfoResponse.tenant).
void FillInfo(const SessionManager& manager, const SluiceService& service, const Principal* who,
              v1::GetInfoResponse* info);

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_SERVICE_H_
