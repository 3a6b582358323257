// sluice health --server HOST:PORT [--service NAME]: whether a daemon serves, by gRPC's health
// checking protocol (no token needed). Exit 0 when it serves, 1 when it does not or cannot be
// reached: a container's HEALTHCHECK and an exec probe run it.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/time/time.h"
#include "sluice/tools/cli.h"
#if SLUICE_WITH_GRPC
#include "sluice/client/server_info.h"
#endif

ABSL_FLAG(std::string, service, "",
          "health: the service to ask after (\"\": the whole daemon; sluice.v1.Sluice)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(5), "health: how long to wait for the answer");

namespace sluice {

int RunHealth() {
#if SLUICE_WITH_GRPC
  const std::string server = absl::GetFlag(FLAGS_server);
  if (server.empty()) {
    std::fprintf(stderr, "sluice health: --server HOST:PORT is required\n");
    return kExitUsage;
  }
  if (absl::GetFlag(FLAGS_timeout) <= absl::ZeroDuration()) {
    std::fprintf(stderr, "sluice health: --timeout is a duration past 0 (5s, 1m, inf)\n");
    return kExitUsage;
  }
  const absl::Status serving = CheckServing(server, absl::GetFlag(FLAGS_service),
                                            absl::GetFlag(FLAGS_timeout), CredentialsFromFlags());
  if (!serving.ok()) {
    std::fprintf(stderr, "sluice health: %s\n", serving.ToString().c_str());
    // A token or a TLS file it cannot send or read is bad input; anything else, not serving.
    if (absl::IsInvalidArgument(serving)) return kExitUsage;
    std::printf("NOT SERVING\n");
    return kExitFailed;
  }
  std::printf("SERVING\n");
  return kExitOk;
#else
  std::fprintf(stderr, "sluice health: this build of sluice has no gRPC client\n");
  return kExitFailed;
#endif
}

}  // namespace sluice
