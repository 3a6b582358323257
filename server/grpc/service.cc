#include "server/grpc/service.h"

#include "kernels/catalog.h"
#include "absl/strings/str_format.h"
#include "proto/codec.h"
#include "server/grpc/session_reactor.h"

namespace sluice {


grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SluiceService::Session(
    grpc::CallbackServerContext* context) {
  // It counts itself among the unopened streams until it opens a session or ends.
  return new SessionReactor(manager_, executor_, &watch_, options_.timeouts, &unopened_, context);
}

grpc::ServerUnaryReactor* SluiceService::GetInfo(grpc::CallbackServerContext* context,
                                                 const v1::GetInfoRequest*,
                                                 v1::GetInfoResponse* response) {
  FillInfo(*manager_, *this, response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void FillInfo(const SessionManager& manager, const SluiceService& service,
              v1::GetInfoResponse* info) {
  const Device& device = manager.device();
  const DeviceInfo& d = device.info();
  info->set_server_version(SLUICE_VERSION);
  info->set_backend(d.kind);
  ToProto(d, device.memory(), device.counters(), info->add_devices());
  info->set_active_sessions(manager.active_sessions());
  info->set_sessions_opened(manager.sessions_opened());
  info->set_max_sessions(manager.options().max_sessions);
  info->set_max_sessions_per_client(manager.options().SessionsPerClient());
  info->set_client_memory(manager.options().client_memory);
  info->set_unopened_streams(service.unopened_streams());
  info->set_max_unopened_streams(service.options().max_unopened_streams);
  info->set_max_queued_requests(StreamBounds::kQueuedRequests);
  info->set_max_queued_bytes(StreamBounds::kQueuedBytes);
  info->set_max_unsent_reply_bytes(StreamBounds::kUnsentReplyBytes);
  info->set_grpc_memory(service.options().grpc_memory);
  info->set_transfer_bytes_in_use(manager.transfers().in_use());
  info->set_transfer_bytes_limit(manager.transfers().limit());
  ToProto(manager.options().limits, info->mutable_default_limits());
  info->set_min_chunk_size(kMinChunkSize);
  info->set_max_chunk_size(manager.options().max_chunk_size);
  ToProto(KernelCatalog::Builtin(), info);
}

}  // namespace sluice
