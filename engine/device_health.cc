#include "sluice/engine/device_health.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "sluice/base/log.h"

namespace sluice {

DeviceHealth::DeviceHealth(std::string name, DeviceRuntime* runtime)
    : name_(std::move(name)), runtime_(runtime) {}

absl::Status DeviceHealth::Start(bool graph_loops) {
  if (!graph_loops) return absl::OkStatus();
  DeviceRuntime::ProbeResult probe;
  {
    absl::MutexLock exclusive(&use_mu_);
    probe = runtime_->ProbeGraphLoops();
    graph_loops_.store(probe.outcome == DeviceRuntime::ProbeOutcome::kLoops);
  }
  switch (probe.outcome) {
    case DeviceRuntime::ProbeOutcome::kLoops:
      return absl::OkStatus();
    case DeviceRuntime::ProbeOutcome::kNoLoops:
      Log("%s: CUDA graph loops unavailable (%s); repeated groups replay one graph launch per "
          "iteration",
          name_, probe.detail);
      return absl::OkStatus();
    case DeviceRuntime::ProbeOutcome::kFault:
      break;
  }
  // The probe tried the least-proven features at once; its fault costs those features, not the
  // device. The reset below runs without it.
  Log("%s: the graph-loop probe failed (%s); resetting the GPU, repeated groups will replay one "
      "graph launch per iteration",
      name_, probe.detail);
  MarkFailed(absl::StrFormat("the graph-loop probe: %s", probe.detail));
  return ResetIfFailed();
}

bool DeviceHealth::MarkFailed(const std::string& what) {
  absl::MutexLock lock(&state_mu_);
  if (failed_.exchange(true)) return false;
  failures_.fetch_add(1);
  failure_ = what;
  return true;
}

absl::Status DeviceHealth::Fail(Severity severity, const std::string& what,
                                absl::Status otherwise) {
  if (severity == Severity::kError) return otherwise;
  // A suspect code from a context that still runs work was this call's alone.
  if (severity == Severity::kSuspect && !failed_.load() && runtime_->Responsive()) {
    return otherwise;
  }
  if (MarkFailed(what)) {
    LogError("%s failed: %s; sessions on it are lost, the next one resets it", name_, what);
  }
  return absl::UnavailableError(absl::StrFormat(
      "the GPU failed (%s); this session's buffers are gone, open a new session", what));
}

absl::Status DeviceHealth::Usable(uint64_t epoch) const {
  if (failed_.load()) {
    absl::MutexLock lock(&state_mu_);
    return absl::UnavailableError(absl::StrFormat(
        "the GPU failed (%s); this session's buffers are gone, open a new session", failure_));
  }
  if (epoch != epoch_.load()) {
    return absl::UnavailableError(
        "the GPU was reset after a failure; this session's buffers are gone, open a new session");
  }
  return absl::OkStatus();
}

absl::Status DeviceHealth::LostError() const {
  return absl::UnavailableError(
      "the GPU could not be reset after a failure; sluiced must be restarted");
}

absl::Status DeviceHealth::ResetIfFailed() {
  if (!failed_.load()) return absl::OkStatus();
  if (lost_.load()) return LostError();
  absl::MutexLock exclusive(&use_mu_);
  if (!failed_.load()) return absl::OkStatus();
  if (lost_.load()) return LostError();  // an open queued behind a failed reset: no second try
  // At most two resets: the second only after a probe that faulted, with the probe off.
  while (true) {
    // Every handle of the old context is dead from here on, whatever happens next.
    epoch_.fetch_add(1);
    if (absl::Status reset = runtime_->Reset(); !reset.ok()) {
      // CUDA promises recovery from a sticky error only to a new process.
      lost_.store(true);
      LogError("%s could not be reset after a failure (%s); it is lost to this process", name_,
          reset.message());
      return LostError();
    }
    if (!graph_loops_.load()) break;
    const DeviceRuntime::ProbeResult probe = runtime_->ProbeGraphLoops();
    if (probe.outcome == DeviceRuntime::ProbeOutcome::kLoops) break;
    graph_loops_.store(false);
    Log("%s: CUDA graph loops unavailable after the reset (%s); repeated groups replay one "
        "graph launch per iteration",
        name_, probe.detail);
    if (probe.outcome == DeviceRuntime::ProbeOutcome::kNoLoops) break;
  }
  absl::MutexLock lock(&state_mu_);
  failed_.store(false);
  resets_.fetch_add(1);
  Log("%s reset after a failure (%s); serving new sessions", name_, failure_);
  failure_.clear();
  return absl::OkStatus();
}

}  // namespace sluice
