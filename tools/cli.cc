#include "sluice/tools/cli.h"

#include <cstdlib>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/engine/device_factory.h"
#if SLUICE_WITH_GRPC
#include "sluice/client/remote_dispatch.h"
#endif

ABSL_FLAG(std::string, server, "",
          "host:port of a sluiced daemon to run on; empty runs in-process (the embedded default)");
ABSL_FLAG(std::string, backend, "auto", "in-process device: auto, cpu or cuda");
ABSL_FLAG(uint64_t, seed, 1, "seed of every generated input");
ABSL_FLAG(std::string, token, "",
          "the tenant's bearer token for a daemon that serves tenants (default: the "
          "SLUICE_TOKEN environment variable, which other users cannot see in ps)");
ABSL_FLAG(bool, tls, false, "connect to the daemon over TLS (any --tls_* file implies it)");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA certificates the daemon's certificate must chain to (default: the system's)");
ABSL_FLAG(std::string, tls_cert, "", "PEM client certificate, for a daemon requiring mutual TLS");
ABSL_FLAG(std::string, tls_key, "", "PEM key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "",
          "the name the daemon's certificate must carry (default: the --server host)");

namespace sluice {

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrFormat("%d B", bytes) : absl::StrFormat("%.1f %s", value, units[unit]);
}

ClientCredentials CredentialsFromFlags() {
  ClientCredentials credentials;
  credentials.token = absl::GetFlag(FLAGS_token);
  if (credentials.token.empty()) {
    if (const char* env = std::getenv("SLUICE_TOKEN"); env != nullptr) credentials.token = env;
  }
  credentials.tls = absl::GetFlag(FLAGS_tls);
  credentials.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  credentials.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  credentials.tls_key = absl::GetFlag(FLAGS_tls_key);
  credentials.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  return credentials;
}

absl::StatusOr<OpenedDispatch> OpenDispatch(const std::string& client_name) {
  OpenedDispatch opened;
  const std::string server = absl::GetFlag(FLAGS_server);
  if (!server.empty()) {
#if SLUICE_WITH_GRPC
    absl::StatusOr<std::unique_ptr<RemoteDispatch>> remote =
        RemoteDispatch::Connect({.target = server,
                                 .client_name = client_name,
                                 .credentials = CredentialsFromFlags(),
                                 .pipelined = true});
    if (!remote.ok()) return remote.status();
    RemoteDispatch* raw = remote->get();
    opened.traffic = [raw] {
      const RemoteDispatch::Counters c = raw->counters();
      return absl::StrFormat("%d network round trips, %d messages, %s sent, %s received",
                             c.round_trips, c.messages_sent + c.messages_received,
                             HumanBytes(c.bytes_sent), HumanBytes(c.bytes_received));
    };
    opened.dispatch = std::move(*remote);
    opened.remote = true;
    return opened;
#else
    (void)client_name;
    return absl::FailedPreconditionError(
        "this build of sluice has no gRPC client (built without gRPC); omit --server");
#endif
  }
  absl::StatusOr<std::shared_ptr<Device>> device =
      CreateDevice(absl::GetFlag(FLAGS_backend), DeviceOptions{});
  if (!device.ok()) return device.status();
  absl::StatusOr<std::unique_ptr<LocalDispatch>> local =
      LocalDispatch::Create({.device = *device});
  if (!local.ok()) return local.status();
  Device* raw = device->get();
  const DeviceCounters start = raw->counters();
  opened.traffic = [raw, start] {
    const DeviceCounters c = raw->counters();
    return absl::StrFormat(
        "%d kernel passes, %d device synchronizations, %s uploaded, %s downloaded",
        c.launches - start.launches, c.synchronizations - start.synchronizations,
        HumanBytes(c.bytes_uploaded - start.bytes_uploaded),
        HumanBytes(c.bytes_downloaded - start.bytes_downloaded));
  };
  opened.dispatch = std::move(*local);
  return opened;
}

}  // namespace sluice
