// A plain HTTP/1.0 GET over loopback TCP, for scraping a daemon's metrics endpoint in tests.
#ifndef SLUICE_TESTS_TESTING_HTTP_GET_H_
#define SLUICE_TESTS_TESTING_HTTP_GET_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::testing {

// GETs `path` from `host_port` (an IPv4 address and port) and returns the body of a 200
// response. Unavailable when it cannot connect, DeadlineExceeded past `timeout`, Internal for
// any other status line.
absl::StatusOr<std::string> HttpGet(const std::string& host_port, const std::string& path,
                                    absl::Duration timeout = absl::Seconds(10));

// The samples of a Prometheus text exposition, by series as written ("name{label=\"v\"}"):
// comment lines are skipped.
std::map<std::string, double> ParseExposition(const std::string& text);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_HTTP_GET_H_
