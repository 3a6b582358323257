#include "tests/testing/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"

namespace sluice::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpProxy>> TcpProxy::Start(int target_port) {
  std::unique_ptr<TcpProxy> proxy(new TcpProxy());
  proxy->target_port_ = target_port;
  proxy->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (proxy->listen_fd_ < 0) return absl::InternalError("socket failed");
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (bind(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(proxy->listen_fd_, 64) != 0 ||
      getsockname(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::InternalError("cannot listen on loopback");
  }
  proxy->port_ = ntohs(addr.sin_port);
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->Accept(); });
  return proxy;
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  CutAll();
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
  if (listen_fd_ >= 0) close(listen_fd_);
}

std::string TcpProxy::address() const { return absl::StrCat("127.0.0.1:", port_); }

void TcpProxy::CutAll() {
  absl::MutexLock lock(&mu_);
  // shutdown, not close: the forwarding threads close their own descriptors.
  for (const int fd : fds_) shutdown(fd, SHUT_RDWR);
  fds_.clear();
}

void TcpProxy::Accept() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in target = Loopback(target_port_);
    if (server < 0 ||
        connect(server, reinterpret_cast<sockaddr*>(&target), sizeof(target)) != 0) {
      close(client);
      if (server >= 0) close(server);
      continue;
    }
    accepted_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    fds_.push_back(client);
    fds_.push_back(server);
    threads_.emplace_back([this, client, server] { Forward(client, server); });
  }
}

void TcpProxy::Forward(int client, int server) {
  char buffer[64 << 10];
  pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
  bool open = true;
  while (open && !stop_.load()) {
    if (poll(fds, 2, 50) <= 0) continue;
    for (int i = 0; i < 2 && open; ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n <= 0) {
        open = false;
        break;
      }
      const int to = fds[1 - i].fd;
      for (ssize_t sent = 0; sent < n;) {
        // MSG_NOSIGNAL: a peer gone (cut) fails the send instead of raising SIGPIPE.
        const ssize_t w = send(to, buffer + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
        if (w <= 0) {
          open = false;
          break;
        }
        sent += w;
      }
      if (i == 1) bytes_down_.fetch_add(static_cast<uint64_t>(n));
    }
  }
  {
    absl::MutexLock lock(&mu_);
    fds_.erase(std::remove_if(fds_.begin(), fds_.end(),
                              [&](int fd) { return fd == client || fd == server; }),
               fds_.end());
  }
  shutdown(client, SHUT_RDWR);
  shutdown(server, SHUT_RDWR);
  close(client);
  close(server);
}

}  // namespace sluice::testing
