#include "tests/testing/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace sluice::testing {

absl::StatusOr<std::string> HttpGet(const std::string& host_port, const std::string& path,
                                    absl::Duration timeout) {
  const size_t colon = host_port.rfind(':');
  sockaddr_in address{};
  address.sin_family = AF_INET;
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port) ||
      inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &address.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("not IPv4 host:port: ", host_port));
  }
  address.sin_port = htons(static_cast<uint16_t>(port));
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket failed");
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to ", host_port));
  }
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host_port,
                                           "\r\n\r\n");
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return absl::UnavailableError("cannot send the request");
  }
  const absl::Time deadline = absl::Now() + timeout;
  std::string response;
  char buffer[16384];
  for (;;) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    const int wait_ms =
        static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
    if (::poll(&p, 1, wait_ms) <= 0) {
      ::close(fd);
      return absl::DeadlineExceededError(absl::StrCat("no full response from ", host_port));
    }
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0) {
      ::close(fd);
      return absl::UnavailableError("the connection broke");
    }
    if (n == 0) break;
    response.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t end_of_head = response.find("\r\n\r\n");
  if (end_of_head == std::string::npos) return absl::InternalError("no HTTP header");
  const std::string status_line = response.substr(0, response.find("\r\n"));
  if (status_line.find(" 200 ") == std::string::npos) {
    return absl::InternalError(absl::StrCat("HTTP status: ", status_line));
  }
  return response.substr(end_of_head + 4);
}

std::map<std::string, double> ParseExposition(const std::string& text) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line.front() == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    samples[std::string(line.substr(0, space))] =
        std::strtod(std::string(line.substr(space + 1)).c_str(), nullptr);
  }
  return samples;
}

}  // namespace sluice::testing
