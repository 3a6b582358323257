// The daemon's Prometheus metrics of events: requests by kind and status code with their queue
// wait and execution time, bytes over the sessions' streams, kernel steps and repeated
// iterations, drains. What the daemon holds at a moment (sessions, device memory, the transfer
// budget) is read when scraped (server/grpc/daemon_metrics.h). Exposed by --metrics_listen
// through prometheus-cpp, whose registry serializes them. Thread-safe.
#ifndef SLUICE_SERVER_METRICS_H_
#define SLUICE_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A request's final reply was made: its operation (kOpen, kRead, ...; OP_NOT_SET for one that
  // carried none), its status, how long it waited behind its session's earlier requests and
  // how long it ran.
  void RequestDone(v1::SessionRequest::OpCase op, absl::StatusCode code, absl::Duration queued,
                   absl::Duration ran);
  // An execute ran `steps` kernel steps, `iterations` of them iterations of a repeated group.
  void Executed(uint64_t steps, uint64_t iterations);
  // Bytes of messages read from and written to sessions' streams.
  void Received(uint64_t bytes) { received_.Increment(static_cast<double>(bytes)); }
  void Sent(uint64_t bytes) { sent_.Increment(static_cast<double>(bytes)); }
  // The daemon began to drain.
  void Drained() { drains_.Increment(); }

  // The metrics' registry, for an exposer.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // The name of an operation as the `kind` label says it: its name in the table of operations
  // (server/ops/op_table.h), "open", "upload", ...; "none" for a request that carried none.
  static std::string_view KindName(v1::SessionRequest::OpCase op);

 private:
  // A kind for each row of the table of operations, and one for "none".
  static size_t KindIndex(v1::SessionRequest::OpCase op);

  // The canonical status codes, 0 (OK) to 16 (UNAUTHENTICATED).
  static constexpr int kCodes = 17;

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  // requests_'s series by kind and code, added to the family the first time each is seen (a
  // series appears once it counts), then counted without the family's lock.
  // By KindIndex.
  std::unique_ptr<std::array<std::atomic<prometheus::Counter*>, kCodes>[]> request_counters_;
  std::vector<prometheus::Histogram*> queued_;
  std::vector<prometheus::Histogram*> ran_;
  prometheus::Counter& received_;
  prometheus::Counter& sent_;
  prometheus::Counter& steps_;
  prometheus::Counter& iterations_;
  prometheus::Counter& drains_;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_METRICS_H_
