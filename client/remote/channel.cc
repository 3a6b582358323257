#include "client/remote/channel.h"

#include <fstream>
#include <iterator>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace sluice {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot read %s from %s (a PEM file)", what, path));
  }
  return text;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientCredentials& credentials,
                                                           grpc::ChannelArguments args) {
  if (!credentials.uses_tls()) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  }
  if (credentials.tls_cert.empty() != credentials.tls_key.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs its key, and a key its certificate (tls_cert, tls_key)");
  }
  grpc::SslCredentialsOptions ssl;
  if (!credentials.tls_ca.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(credentials.tls_ca, "the CA certificates"));
  }
  if (!credentials.tls_cert.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_cert_chain,
                     ReadPem(credentials.tls_cert, "the client's certificate"));
    ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPem(credentials.tls_key, "the client's key"));
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

}  // namespace sluice
