// GetInfo for tools and tests: what a daemon serves (backend, devices, memory, sessions,
// limits, kernel catalog).
#ifndef SLUICE_CLIENT_SERVER_INFO_H_
#define SLUICE_CLIENT_SERVER_INFO_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sluice/client/credentials.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

// Calls GetInfo on the daemon at `target` (host:port) with `credentials`. Unavailable if it
// cannot be reached, DeadlineExceeded if it does not answer within `timeout`, Unauthenticated
// when it serves tenants and the token is not one of theirs.
absl::StatusOr<v1::GetInfoResponse> GetServerInfo(const std::string& target,
                                                  absl::Duration timeout,
                                                  const ClientCredentials& credentials = {});

// Asks the daemon at `target` whether it serves (gRPC's health checking protocol): OK when it
// does; Unavailable when it does not (it drains) or cannot be reached; NotFound when it knows
// no service named `service` ("" asks after the whole server, "sluice.v1.Sluice" after the
// Sluice service); DeadlineExceeded past `timeout`. No token is needed.
absl::Status CheckServing(const std::string& target, const std::string& service,
                          absl::Duration timeout, const ClientCredentials& credentials = {});

}  // namespace sluice

#endif  // SLUICE_CLIENT_SERVER_INFO_H_
