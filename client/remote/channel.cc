#include "sluice/client/remote/channel.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "sluice/base/small_file.h"
#include "sluice/base/status_macros.h"
#include "sluice/base/token.h"
#include "sluice/proto/contract.h"

namespace sluice {

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientCredentials& credentials,
                                                           grpc::ChannelArguments args) {
  RETURN_IF_ERROR(CheckToken(credentials.token));
  if (!credentials.uses_tls()) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  }
  if (credentials.tls_cert.empty() != credentials.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs its key, and a key its certificate (tls_cert, tls_key)");
  }
  grpc::SslCredentialsOptions ssl;
  if (!credentials.tls_ca.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs,
                     ReadPemFile(credentials.tls_ca, "the CA certificates"));
  }
  if (!credentials.tls_cert.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_cert_chain,
                     ReadPemFile(credentials.tls_cert, "the client's certificate"));
    ASSIGN_OR_RETURN(ssl.pem_private_key,
                     ReadPemFile(credentials.tls_key, "the client's key"));
  }
  if (!credentials.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(credentials.tls_server_name);
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

bool NamesSeveralDaemons(const std::string& target) {
  return absl::StartsWith(target, "ipv4:") || absl::StartsWith(target, "ipv6:") ||
         absl::StartsWith(target, "dns:");
}

std::string PinnedServerName(const std::string& target, const ClientCredentials& credentials) {
  if (!credentials.tls_server_name.empty()) return credentials.tls_server_name;
  if (!absl::StartsWith(target, "dns:")) return "";
  // dns:[//authority/]host[:port]
  absl::string_view rest = absl::string_view(target).substr(4);
  if (absl::StartsWith(rest, "//")) {
    const size_t slash = rest.find('/', 2);
    rest = slash == absl::string_view::npos ? absl::string_view() : rest.substr(slash + 1);
  }
  if (absl::StartsWith(rest, "[")) {
    const size_t close = rest.find(']');
    return std::string(close == absl::string_view::npos ? rest : rest.substr(1, close - 1));
  }
  return std::string(rest.substr(0, rest.rfind(':')));
}

void AddToken(const ClientCredentials& credentials, grpc::ClientContext* context) {
  if (!credentials.token.empty()) {
    context->AddMetadata("authorization", "Bearer " + credentials.token);
  }
}

namespace {

grpc::ChannelArguments SessionChannelArguments() {
  grpc::ChannelArguments args;
  // Notice a vanished daemon host within half a minute even while a long call runs: pinged
  // every 10 s, given 20 s to answer (a busy daemon answers pings from its I/O threads).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Replies are at most one chunk plus a little framing.
  args.SetMaxReceiveMessageSize(kMaxChunkSize + (1 << 20));
  return args;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeSessionChannel(
    const std::string& target, const ClientCredentials& credentials) {
  grpc::ChannelArguments args = SessionChannelArguments();
  if (!NamesSeveralDaemons(target)) {
    // A connection per session: one job's transfer never queues behind another's.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return MakeChannel(target, credentials, std::move(args));
  }
  // Checked here as MakeChannel checks it: a balanced target's channel is made once, and its
  // sessions' tokens travel per call.
  RETURN_IF_ERROR(CheckToken(credentials.token));
  // Balanced: round_robin turns among the target's daemons on one channel, so the sessions of
  // this process share it (kept for the process's life: a fresh channel would start over at
  // the first daemon). Tokens travel per call, so only the TLS settings tell channels apart.
  static absl::Mutex mu(absl::kConstInit);
  static auto* const channels =
      new absl::flat_hash_map<std::string, std::shared_ptr<grpc::Channel>>();  // never freed
  const std::string key = absl::StrCat(target, "\n", credentials.tls_ca, "\n",
                                       credentials.tls_cert, "\n", credentials.tls_key, "\n",
                                       credentials.tls_server_name, "\n",
                                       credentials.uses_tls());
  absl::MutexLock lock(&mu);
  if (auto it = channels->find(key); it != channels->end()) return it->second;
  args.SetLoadBalancingPolicyName("round_robin");
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   MakeChannel(target, credentials, std::move(args)));
  channels->emplace(key, channel);
  return channel;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakePinnedChannel(
    const std::string& peer, const ClientCredentials& credentials,
    const std::string& server_name) {
  grpc::ChannelArguments args = SessionChannelArguments();
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  ClientCredentials pinned = credentials;
  pinned.tls_server_name = server_name;
  return MakeChannel(peer, pinned, std::move(args));
}

}  // namespace sluice
