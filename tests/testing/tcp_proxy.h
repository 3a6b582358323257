// A TCP proxy on loopback for tests: it forwards every connection to a target and can cut
// them all at once (both sides closed, as a proxy or a network failure would), while it keeps
// accepting new connections. Every wait is bounded; the destructor stops and joins its threads.
#ifndef SLUICE_TESTS_TESTING_TCP_PROXY_H_
#define SLUICE_TESTS_TESTING_TCP_PROXY_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace sluice::testing {

class TcpProxy {
 public:
  // Listens on 127.0.0.1:0 and forwards to `target_port` on 127.0.0.1.
  static absl::StatusOr<std::unique_ptr<TcpProxy>> Start(int target_port);
  ~TcpProxy();

  // host:port clients dial.
  std::string address() const;
  // Closes every connection forwarded so far (new ones are forwarded as before).
  void CutAll() ABSL_LOCKS_EXCLUDED(mu_);
  // Connections accepted so far.
  int connections() const { return accepted_.load(); }
  // Bytes forwarded from the daemon to clients so far.
  uint64_t bytes_down() const { return bytes_down_.load(); }

 private:
  TcpProxy() = default;
  void Accept();
  void Forward(int client, int server);

  int listen_fd_ = -1;
  int port_ = 0;
  int target_port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<uint64_t> bytes_down_{0};
  absl::Mutex mu_;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);  // of live forwarded connections
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::thread acceptor_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_TCP_PROXY_H_
