// What the daemon holds now, read each time Prometheus scrapes it: sessions (open, opened since
// start, waiting to be resumed, streams not yet open), device memory and counters (uploads,
// downloads, kernel launches, failures, resets), the transfer budget, whether it drains, and
// each tenant's sessions, memory and device time. The events (requests, bytes, steps) are in
// Metrics (server/metrics.h).
#ifndef SLUICE_SERVER_GRPC_DAEMON_METRICS_H_
#define SLUICE_SERVER_GRPC_DAEMON_METRICS_H_

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "sluice/engine/session_manager.h"
#include "sluice/server/grpc/service.h"

namespace sluice {

class DaemonStateCollector final : public prometheus::Collectable {
 public:
  // Neither is owned; both must outlive every Collect (the exposer goes first).
  DaemonStateCollector(const SessionManager* manager, const SluiceService* service)
      : manager_(manager), service_(service) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const SessionManager* const manager_;
  const SluiceService* const service_;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_DAEMON_METRICS_H_
