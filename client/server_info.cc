#include "sluice/client/server_info.h"

#include <chrono>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "sluice/base/status_macros.h"
#include "sluice/client/remote/channel.h"
#include "sluice/proto/codec.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

namespace {

// A call's deadline `timeout` from now: an infinite or huge one saturates (no overflow past the
// clock's range, which would be a deadline already past).
std::chrono::system_clock::time_point Deadline(absl::Duration timeout) {
  return absl::ToChronoTime(absl::Now() + timeout);
}

}  // namespace

absl::StatusOr<v1::GetInfoResponse> GetServerInfo(const std::string& target,
                                                  absl::Duration timeout,
                                                  const ClientCredentials& credentials) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   MakeChannel(target, credentials, grpc::ChannelArguments()));
  std::unique_ptr<v1::Sluice::Stub> stub = v1::Sluice::NewStub(channel);
  grpc::ClientContext context;
  AddToken(credentials, &context);
  context.set_deadline(Deadline(timeout));
  v1::GetInfoResponse info;
  const grpc::Status status = stub->GetInfo(&context, v1::GetInfoRequest(), &info);
  if (!status.ok()) return StatusFromGrpc(status);
  return info;
}

absl::Status CheckServing(const std::string& target, const std::string& service,
                          absl::Duration timeout, const ClientCredentials& credentials) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   MakeChannel(target, credentials, grpc::ChannelArguments()));
  std::unique_ptr<grpc::health::v1::Health::Stub> stub =
      grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(Deadline(timeout));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return StatusFromGrpc(status);
  switch (response.status()) {
    case grpc::health::v1::HealthCheckResponse::SERVING:
      return absl::OkStatus();
    case grpc::health::v1::HealthCheckResponse::NOT_SERVING:
      return absl::UnavailableError(absl::StrFormat("%s is NOT_SERVING (it drains)", target));
    default:
      return absl::UnavailableError(absl::StrFormat(
          "%s answered %s", target,
          grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status())));
  }
}

}  // namespace sluice
