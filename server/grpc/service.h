// The sluice.v1.Sluice service: Session streams (one SessionReactor each) and GetInfo.
#ifndef SLUICE_SERVER_GRPC_SERVICE_H_
#define SLUICE_SERVER_GRPC_SERVICE_H_

#include "base/executor.h"
#include "engine/session_manager.h"
#include "grpcpp/grpcpp.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

// Session is served raw (ByteBuffers parsed by the reactor), GetInfo as a plain callback.
class SluiceService final
    : public v1::Sluice::WithRawCallbackMethod_Session<
          v1::Sluice::WithCallbackMethod_GetInfo<v1::Sluice::Service>> {
 public:
  // Neither is owned; both must outlive the server.
  SluiceService(SessionManager* manager, Executor* executor)
      : manager_(manager), executor_(executor) {}

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const v1::GetInfoRequest* request,
                                    v1::GetInfoResponse* response) override;

 private:
  SessionManager* const manager_;
  Executor* const executor_;
};

// Describes the daemon: backend, device, memory, counters, sessions, limits and catalog.
void FillInfo(const SessionManager& manager, v1::GetInfoResponse* info);

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_SERVICE_H_
