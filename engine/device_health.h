// The failure and recovery policy of a device whose context can break, as a GPU's can: a fault
// marks the device failed for every session on it, the next session to open resets it, a reset
// that fails loses the device for the process, and graph loops are probed at start and after
// every reset, where a probe that faults means "no graph loops", never "no GPU".
//
// Free of CUDA, so that the policy is tested on any machine against a fake runtime that fails
// the way a GPU does; the CUDA device supplies the real runtime.
#ifndef SLUICE_ENGINE_DEVICE_HEALTH_H_
#define SLUICE_ENGINE_DEVICE_HEALTH_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace sluice {

// What the policy asks of the device's runtime.
class DeviceRuntime {
 public:
  enum class ProbeOutcome {
    kLoops,    // graph loops run as specified
    kNoLoops,  // they do not (unsupported, or wrong results); the context is fine
    kFault,    // the probe hit an error that may have broken the context, or did not finish
  };
  struct ProbeResult {
    ProbeOutcome outcome;
    std::string detail;  // the error or the reason, for the log
  };

  virtual ~DeviceRuntime() = default;

  // Builds a graph loop, runs it and checks what it did, waiting a bounded time. Called with
  // the device's use mutex held exclusively: no other work runs on the device meanwhile.
  virtual ProbeResult ProbeGraphLoops() = 0;
  // Destroys the device's context and builds the device's own state on a fresh one (kernels
  // loaded, library kernels run once, internal streams and words made). Called with the use
  // mutex held exclusively. An error means the device cannot be brought back in this process.
  virtual absl::Status Reset() = 0;
  // Whether the context still runs work (a tiny copy and a bounded wait). Tells a fault from an
  // error code that only might be one. Called with the use mutex held shared or not at all.
  virtual bool Responsive() = 0;
};

// Thread-safe. Operations on the device hold use_mutex() shared; a reset holds it exclusively,
// so no operation runs across one.
class DeviceHealth {
 public:
  // How bad an error is, as the runtime's error code tells it.
  enum class Severity {
    kError,    // this call failed; the context is fine
    kSuspect,  // a code that may or may not mean a broken context: Responsive() decides
    kFault,    // the context is broken until a reset
  };

  // `name` names the device in log lines ("GPU 0"); `runtime` must outlive this object.
  DeviceHealth(std::string name, DeviceRuntime* runtime);

  // At creation, before any session: probes graph loops when `graph_loops` is asked for. A
  // probe that faults marks the device failed and resets it at once, without probing again;
  // repeated groups then run one launch per iteration. Returns Unavailable (and lost() holds)
  // when that reset fails. Not called concurrently with anything else.
  absl::Status Start(bool graph_loops) ABSL_LOCKS_EXCLUDED(use_mu_);

  // Records a failed runtime call described by `what`. A fault (or a suspect error that
  // Responsive() confirms) marks the device failed and returns Unavailable saying why; any
  // other error returns `otherwise`. Thread-safe; may hold use_mutex() shared.
  absl::Status Fail(Severity severity, const std::string& what, absl::Status otherwise)
      ABSL_LOCKS_EXCLUDED(state_mu_);

  // OK when work made at `epoch` can run: Unavailable (saying why) when the device failed, or
  // was reset since `epoch`.
  absl::Status Usable(uint64_t epoch) const ABSL_LOCKS_EXCLUDED(state_mu_);

  // Resets a failed device so that new sessions can run; OK at once when it has not failed.
  // After the reset graph loops are probed again (when they were on); a probe that faults
  // turns them off and resets once more, so the device is never declared healthy on a context
  // the probe broke. Unavailable once a reset has failed (lost() from then on). Takes
  // use_mutex() exclusively.
  absl::Status ResetIfFailed() ABSL_LOCKS_EXCLUDED(use_mu_, state_mu_);

  // The current context's generation; bumped by every reset.
  uint64_t epoch() const { return epoch_.load(); }
  bool failed() const { return failed_.load(); }
  // A reset failed: nothing runs on the device again in this process.
  bool lost() const { return lost_.load(); }
  // Failures marked, and resets that brought the device back, since creation.
  uint64_t failures() const { return failures_.load(); }
  uint64_t resets() const { return resets_.load(); }
  // Whether repeated groups run as graph loops on the current context.
  bool graph_loops() const { return graph_loops_.load(); }

  absl::Mutex& use_mutex() ABSL_LOCK_RETURNED(use_mu_) { return use_mu_; }

 private:
  // Marks the device failed; the first failure is the one reported. Returns whether this was it.
  bool MarkFailed(const std::string& what) ABSL_LOCKS_EXCLUDED(state_mu_);
  absl::Status LostError() const;

  const std::string name_;        // const after construction
  DeviceRuntime* const runtime_;  // const after construction

  absl::Mutex use_mu_;
  mutable absl::Mutex state_mu_ ABSL_ACQUIRED_AFTER(use_mu_);
  std::string failure_ ABSL_GUARDED_BY(state_mu_);  // the first fault since the last reset
  std::atomic<bool> failed_{false};
  std::atomic<bool> lost_{false};
  std::atomic<uint64_t> epoch_{1};
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> resets_{0};
  // Changed only with use_mu_ held exclusively (at start and by a reset).
  std::atomic<bool> graph_loops_{false};
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_DEVICE_HEALTH_H_
