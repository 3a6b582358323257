#include "sluice/server/metrics.h"

#include <string>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "sluice/server/ops/op_table.h"

namespace sluice {
namespace {

using Op = v1::SessionRequest::OpCase;

// From 50 us (a ping's, a small read's queue wait) by fourfold steps to 3.5 minutes (a long
// window; a request's own limit is --max_request_seconds).
prometheus::Histogram::BucketBoundaries Buckets() {
  prometheus::Histogram::BucketBoundaries bounds;
  for (double bound = 50e-6; bound < 300; bound *= 4) bounds.push_back(bound);
  return bounds;
}

prometheus::Counter& Single(prometheus::Registry& registry, const std::string& name,
                            const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

}  // namespace

std::string_view Metrics::KindName(Op op) {
  const OpSpec* spec = FindOp(op);
  return spec != nullptr ? spec->name : "none";
}

size_t Metrics::KindIndex(Op op) { return OpIndex(op); }  // kOpCount: none

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("sluice_requests_total")
                    .Help("Requests answered, by operation and the status code of their final "
                          "reply")
                    .Register(*registry_)),
      received_(Single(*registry_, "sluice_received_bytes_total",
                       "Bytes of request messages read from sessions' streams")),
      sent_(Single(*registry_, "sluice_sent_bytes_total",
                   "Bytes of reply messages made for sessions' streams")),
      steps_(Single(*registry_, "sluice_kernel_steps_total",
                    "Kernel steps run by executes that completed")),
      iterations_(Single(*registry_, "sluice_repeated_iterations_total",
                         "Iterations of repeated step groups run by executes that completed")),
      drains_(Single(*registry_, "sluice_drains_total",
                     "Drains begun (a stop signal, or a device lost for good)")) {
  auto& queued = prometheus::BuildHistogram()
                     .Name("sluice_request_queue_seconds")
                     .Help("How long a request waited behind its session's earlier requests "
                           "before it ran, by operation")
                     .Register(*registry_);
  auto& ran = prometheus::BuildHistogram()
                  .Name("sluice_request_seconds")
                  .Help("How long a request ran (device work and transfers), by operation")
                  .Register(*registry_);
  const size_t kinds = kOpCount + 1;
  request_counters_ =
      std::make_unique<std::array<std::atomic<prometheus::Counter*>, kCodes>[]>(kinds);
  for (size_t i = 0; i < kinds; ++i) {
    const std::string kind(i < kOpCount ? kOpTable[i].name : "none");
    queued_.push_back(&queued.Add({{"kind", kind}}, Buckets()));
    ran_.push_back(&ran.Add({{"kind", kind}}, Buckets()));
  }
}

void Metrics::RequestDone(Op op, absl::StatusCode code, absl::Duration queued,
                          absl::Duration ran) {
  const size_t kind = KindIndex(op);
  const int code_index = static_cast<int>(code);
  if (code_index >= 0 && code_index < kCodes) {
    std::atomic<prometheus::Counter*>& slot = request_counters_[kind][code_index];
    prometheus::Counter* counter = slot.load(std::memory_order_acquire);
    if (counter == nullptr) {
      // Family::Add returns the existing series when another thread added it first.
      counter = &requests_.Add(
          {{"kind", std::string(KindName(op))}, {"code", absl::StatusCodeToString(code)}});
      slot.store(counter, std::memory_order_release);
    }
    counter->Increment();
  } else {
    requests_
        .Add({{"kind", std::string(KindName(op))}, {"code", absl::StatusCodeToString(code)}})
        .Increment();
  }
  queued_[kind]->Observe(absl::ToDoubleSeconds(queued));
  ran_[kind]->Observe(absl::ToDoubleSeconds(ran));
}

void Metrics::Executed(uint64_t steps, uint64_t iterations) {
  steps_.Increment(static_cast<double>(steps));
  iterations_.Increment(static_cast<double>(iterations));
}

}  // namespace sluice
