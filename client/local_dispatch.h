// LocalDispatch: ResidentDispatch in-process, over a Device (the embedded default). It embeds
// one engine Session, so it validates, batches and synchronizes exactly as the daemon
// does: UploadMany and UploadAtMany are one batch and one synchronization, a sequence with
// reads is one synchronization, and repeated groups are looped by the device.
#ifndef SLUICE_CLIENT_LOCAL_DISPATCH_H_
#define SLUICE_CLIENT_LOCAL_DISPATCH_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "sluice/client/core_dispatch.h"

namespace sluice {

class Device;   // engine/device.h: a CPU or CUDA device (engine/device_factory.h makes one)
class Session;  // engine/session.h

class LocalDispatch final : public CoreDispatch {
 public:
  struct Options {
    std::shared_ptr<Device> device;  // required; may be shared with other dispatchers
  };

  // InvalidArgument if no device is given.
  static absl::StatusOr<std::unique_ptr<LocalDispatch>> Create(const Options& options);
  // A LocalDispatch over a new CpuDevice using every core.
  static absl::StatusOr<std::unique_ptr<LocalDispatch>> CreateCpu();

  // Frees every buffer this dispatcher still holds.
  ~LocalDispatch() override;

  // All methods are thread-safe; device work runs one call at a time, in arrival order.
  std::string_view backend_id() const override;
  std::string_view backend_version() const override;
  absl::StatusOr<Resource> Allocate(size_t byte_len) override;
  absl::Status Free(Resource resource) override;
  absl::Status UploadAtMany(absl::Span<const RangedUpload> uploads) override;
  // Stops the sequences running or waiting to run now (uploads and reads in progress end
  // normally: they are bounded copies).
  void Cancel() override;

  // The device it runs on (include engine/device.h to use it: memory, counters).
  Device& device() const;

 protected:
  absl::Status Execute(absl::Span<const Step> prefix, absl::Span<const Step> repeated,
                       uint32_t repeat_count, absl::Span<const ReadRange> ranges,
                       ReadTarget target) override;
  absl::StatusOr<uint64_t> BufferSize(const Resource& resource) const override;

 private:
  explicit LocalDispatch(std::unique_ptr<Session> session);

  // The session handle behind `resource`: NotFound for a default Resource,
  // FailedPrecondition for one issued by another dispatcher.
  absl::StatusOr<uint64_t> HandleOf(const Resource& resource) const;

  const uint64_t owner_;  // const after construction: tags every Resource issued here
  const std::unique_ptr<Session> session_;
  // The cancel flags of the sequences in flight (see Cancel).
  absl::Mutex in_flight_mu_;
  std::vector<std::atomic<bool>*> in_flight_ ABSL_GUARDED_BY(in_flight_mu_);
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_LOCAL_DISPATCH_H_
