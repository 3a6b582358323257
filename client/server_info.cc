#include "client/server_info.h"

#include <chrono>

#include "grpcpp/grpcpp.h"
#include "base/status_macros.h"
#include "client/remote/channel.h"
#include "proto/codec.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

absl::StatusOr<v1::GetInfoResponse> GetServerInfo(const std::string& target,
                                                  absl::Duration timeout,
                                                  const ClientCredentials& credentials) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   MakeChannel(target, credentials, grpc::ChannelArguments()));
  std::unique_ptr<v1::Sluice::Stub> stub = v1::Sluice::NewStub(channel);
  grpc::ClientContext context;
  AddToken(credentials, &context);
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::microseconds(absl::ToInt64Microseconds(timeout)));
  v1::GetInfoResponse info;
  const grpc::Status status = stub->GetInfo(&context, v1::GetInfoRequest(), &info);
  if (!status.ok()) return StatusFromGrpc(status);
  return info;
}

}  // namespace sluice
