// Channels to a daemon with the client's credentials (client/credentials.h). Private to the
// client library.
#ifndef SLUICE_CLIENT_REMOTE_CHANNEL_H_
#define SLUICE_CLIENT_REMOTE_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/credentials.h"
#include "grpcpp/grpcpp.h"

namespace sluice {

// A channel to `target` with `args`, over TLS when `credentials` ask for it. InvalidArgument
// when a certificate or key file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientCredentials& credentials,
                                                           grpc::ChannelArguments args);

// Adds the token, if any, to a call's metadata.
void AddToken(const ClientCredentials& credentials, grpc::ClientContext* context);

}  // namespace sluice

#endif  // SLUICE_CLIENT_REMOTE_CHANNEL_H_
