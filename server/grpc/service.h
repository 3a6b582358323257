// The sluice.v1.Sluice service: Session streams (one SessionReactor each) and GetInfo.
#ifndef SLUICE_SERVER_GRPC_SERVICE_H_
#define SLUICE_SERVER_GRPC_SERVICE_H_

#include <atomic>
#include <cstdint>

#include "base/executor.h"
#include "engine/session_manager.h"
#include "grpcpp/grpcpp.h"
#include "server/grpc/session_reactor.h"
#include "server/grpc/stream_watch.h"
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
    // messages in flight). 0: the transfer budget plus 256M (an upload's chunks stay in the
    // buffers gRPC read them into until the upload runs). Resolved by Daemon::Start.
    uint64_t grpc_memory = 0;
  };

  // Neither is owned; both must outlive the server.
  SluiceService(SessionManager* manager, Executor* executor, const Options& options)
      : manager_(manager), executor_(executor), options_(options), watch_(absl::Seconds(1)) {}

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const v1::GetInfoRequest* request,
                                    v1::GetInfoResponse* response) override;

  // Streams that have not opened a session yet.
  uint32_t unopened_streams() const { return unopened_.size(); }
  const Options& options() const { return options_; }

 private:
  SessionManager* const manager_;
  Executor* const executor_;
  const Options options_;
  UnopenedStreams unopened_{options_.max_unopened_streams};
  StreamWatch watch_;  // last: its thread stops before the rest goes
};

// Describes the daemon: backend, device, memory, counters, sessions, streams, limits and
// catalog.
void FillInfo(const SessionManager& manager, const SluiceService& service,
              v1::GetInfoResponse* info);

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_SERVICE_H_
