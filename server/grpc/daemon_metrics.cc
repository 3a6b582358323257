#include "sluice/server/grpc/daemon_metrics.h"

#include <string>
#include <utility>

#include "absl/time/time.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"

namespace sluice {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Appends one series to the family `family` (a gauge or a counter).
void AddSeries(MetricFamily& family, double value, std::vector<ClientMetric::Label> labels) {
  ClientMetric metric;
  metric.label = std::move(labels);
  if (family.type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

// Appends a family of one series (labelled `labels`) of `value`.
void Add(std::vector<MetricFamily>& out, const char* name, MetricType type, const char* help,
         double value, std::vector<ClientMetric::Label> labels = {}) {
  out.push_back(MetricFamily{.name = name, .help = help, .type = type});
  AddSeries(out.back(), value, std::move(labels));
}

}  // namespace

std::vector<MetricFamily> DaemonStateCollector::Collect() const {
  constexpr MetricType kGauge = MetricType::Gauge;
  constexpr MetricType kCounter = MetricType::Counter;
  std::vector<MetricFamily> out;
  const SessionManager& m = *manager_;
  Add(out, "sluice_build_info", kGauge, "The daemon's version (always 1)", 1,
      {{"version", SLUICE_VERSION}});
  Add(out, "sluice_sessions_active", kGauge, "Sessions open now", m.active_sessions());
  Add(out, "sluice_sessions_max", kGauge, "Sessions the daemon serves at once (--max_sessions)",
      m.options().max_sessions);
  Add(out, "sluice_sessions_opened_total", kCounter, "Sessions opened since the daemon started",
      static_cast<double>(m.sessions_opened()));
  Add(out, "sluice_sessions_waiting_resume", kGauge,
      "Resumable sessions whose stream broke, holding their buffers for their client",
      static_cast<double>(service_->resumable().parked()));
  Add(out, "sluice_streams_unopened", kGauge, "Streams that have not opened a session yet",
      service_->unopened_streams());
  {
    // Refused logins, by what was wrong: a dashboard sees someone knocking with a bad token.
    const SluiceService::AuthFailures refused = service_->auth_failures();
    MetricFamily family{.name = "sluice_auth_failures_total",
                        .help = "Calls refused for their credentials (UNAUTHENTICATED), by reason",
                        .type = kCounter};
    AddSeries(family, static_cast<double>(refused.no_token), {{"reason", "no_token"}});
    AddSeries(family, static_cast<double>(refused.unknown_token), {{"reason", "unknown_token"}});
    out.push_back(std::move(family));
  }
  Add(out, "sluice_draining", kGauge, "1 while the daemon drains (refusing new sessions)",
      m.draining() ? 1 : 0);
  Add(out, "sluice_transfer_bytes_in_use", kGauge,
      "Host memory held for uploads being assembled and reads waiting to be sent",
      static_cast<double>(m.transfers().in_use()));
  Add(out, "sluice_transfer_bytes_limit", kGauge,
      "The transfer budget (--max_transfer_bytes)", static_cast<double>(m.transfers().limit()));
  Add(out, "sluice_upload_blocks_kept_bytes", kGauge,
      "Upload blocks kept warm for the next upload (at most an eighth of the transfer budget)",
      static_cast<double>(m.upload_blocks().kept_bytes()));

  const Device& device = m.device();
  const MemoryInfo memory = device.memory();
  const DeviceCounters counters = device.counters();
  const std::vector<ClientMetric::Label> labels = {{"device", device.info().id},
                                                   {"backend", device.info().kind}};
  Add(out, "sluice_device_memory_used_bytes", kGauge,
      "Device memory allocated now: buffers and the device's scratch",
      static_cast<double>(memory.used), labels);
  Add(out, "sluice_device_memory_limit_bytes", kGauge,
      "Device memory the daemon hands out at most (--cuda_memory, --cpu_memory)",
      static_cast<double>(memory.total), labels);
  Add(out, "sluice_device_memory_peak_bytes", kGauge, "Most device memory allocated at once",
      static_cast<double>(memory.peak), labels);
  Add(out, "sluice_device_uploaded_bytes_total", kCounter, "Bytes copied from host to device",
      static_cast<double>(counters.bytes_uploaded), labels);
  Add(out, "sluice_device_downloaded_bytes_total", kCounter, "Bytes copied from device to host",
      static_cast<double>(counters.bytes_downloaded), labels);
  Add(out, "sluice_device_kernel_launches_total", kCounter, "Kernel passes run",
      static_cast<double>(counters.launches), labels);
  Add(out, "sluice_device_failures_total", kCounter,
      "Times the device failed (a GPU context that broke; its sessions were lost)",
      static_cast<double>(counters.failures), labels);
  Add(out, "sluice_device_resets_total", kCounter,
      "Resets that brought the device back after a failure",
      static_cast<double>(counters.resets), labels);
  Add(out, "sluice_device_lost", kGauge,
      "1 once the device is lost to the process (it drains and exits 3 for a restart)",
      device.lost() ? 1 : 0, labels);

  // Each tenant's share: only with a tenants file.
  if (const std::shared_ptr<const TenantTable> tenants = service_->tenants();
      tenants != nullptr) {
    MetricFamily sessions{.name = "sluice_tenant_sessions",
                          .help = "A tenant's open sessions",
                          .type = kGauge};
    MetricFamily used{.name = "sluice_tenant_memory_used_bytes",
                      .help = "Device memory a tenant's sessions hold",
                      .type = kGauge};
    MetricFamily limit{.name = "sluice_tenant_memory_limit_bytes",
                       .help = "Device memory a tenant's sessions may hold together",
                       .type = kGauge};
    // A gauge: it starts again from 0 once the tenant's last session has closed.
    MetricFamily time{.name = "sluice_tenant_device_seconds",
                      .help = "Device time a tenant's work has held since it last had no "
                              "session open",
                      .type = kGauge};
    for (const Tenant& tenant : tenants->tenants()) {
      const ClientUse use = m.client_use(
          tenant.name, TenantTable::LimitsOf(tenant, m.transfers().limit()));
      const std::vector<ClientMetric::Label> who = {{"tenant", tenant.name}};
      AddSeries(sessions, use.sessions, who);
      AddSeries(used, static_cast<double>(use.memory_used), who);
      AddSeries(limit, static_cast<double>(use.memory_limit), who);
      AddSeries(time, absl::ToDoubleSeconds(use.device_time), who);
    }
    for (MetricFamily* family : {&sessions, &used, &limit, &time}) {
      out.push_back(std::move(*family));
    }
  }
  return out;
}

}  // namespace sluice
