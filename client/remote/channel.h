// Channels to a daemon with the client's credentials (client/credentials.h). Private to the
// client library.
#ifndef SLUICE_CLIENT_REMOTE_CHANNEL_H_
#define SLUICE_CLIENT_REMOTE_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "sluice/client/credentials.h"

namespace sluice {

// A channel to `target` with `args`, over TLS when `credentials` ask for it. InvalidArgument
// when a certificate or key file cannot be read, or the token is not printable ASCII with no
// blank (0x21 to 0x7e) of at most kMaxTokenBytes bytes (CheckToken).
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientCredentials& credentials,
                                                           grpc::ChannelArguments args);

// Whether `target` is a gRPC name-resolver URI that may name several daemons:
// "ipv4:10.0.0.1:7450,10.0.0.2:7450", "ipv6:[::1]:7450,[::1]:7451" or "dns:///sluice:7450". Its
// sessions are balanced over the daemons it names (see MakeSessionChannel); a plain
// host:port names one daemon.
bool NamesSeveralDaemons(const std::string& target);

// The name a daemon's certificate must carry when a session that `target` balanced is pinned
// to the address of its daemon: `credentials.tls_server_name`, else the host of a "dns:" target,
// else "" (gRPC's default for the address).
std::string PinnedServerName(const std::string& target, const ClientCredentials& credentials);

// A channel for sessions with `target`: keepalive to notice a dead daemon within seconds,
// replies of up to a chunk, and `credentials` (see MakeChannel). For a plain host:port, a
// channel of the session's own (a connection of its own: no session's transfer queues behind
// another's). For a target that names several daemons (NamesSeveralDaemons), one channel per
// target and TLS settings in the process, shared by its sessions, balancing them with gRPC's
// round_robin policy: each new session goes to the next daemon that is up, and a session's
// stream stays on its daemon.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeSessionChannel(
    const std::string& target, const ClientCredentials& credentials);

// A channel of its own to the daemon `peer` (a call's peer, "ipv4:10.0.0.7:7450"), for
// resuming a session that a balanced target placed there; its certificate must carry
// `server_name` when not empty (see PinnedServerName).
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakePinnedChannel(
    const std::string& peer, const ClientCredentials& credentials,
    const std::string& server_name);

// Adds the token, if any, to a call's metadata.
void AddToken(const ClientCredentials& credentials, grpc::ClientContext* context);

}  // namespace sluice

#endif  // SLUICE_CLIENT_REMOTE_CHANNEL_H_
