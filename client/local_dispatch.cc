#include "sluice/client/local_dispatch.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "sluice/base/interrupt.h"
#include "sluice/base/random.h"
#include "sluice/base/status_macros.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/engine/device.h"
#include "sluice/engine/session.h"

namespace sluice {

absl::StatusOr<std::unique_ptr<LocalDispatch>> LocalDispatch::Create(const Options& options) {
  if (options.device == nullptr) {
    return absl::InvalidArgumentError("LocalDispatch: no device");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                   Session::Create(options.device, Session::Options{}));
  return std::unique_ptr<LocalDispatch>(new LocalDispatch(std::move(session)));
}

absl::StatusOr<std::unique_ptr<LocalDispatch>> LocalDispatch::CreateCpu() {
  ASSIGN_OR_RETURN(std::shared_ptr<CpuDevice> device, CpuDevice::Create({}));
  return Create(Options{.device = std::move(device)});
}

LocalDispatch::LocalDispatch(std::unique_ptr<Session> session)
    : owner_(SecureRandom64()), session_(std::move(session)) {}

LocalDispatch::~LocalDispatch() = default;

Device& LocalDispatch::device() const { return session_->device(); }

std::string_view LocalDispatch::backend_id() const { return device().info().id; }

std::string_view LocalDispatch::backend_version() const { return device().info().version; }

absl::StatusOr<uint64_t> LocalDispatch::HandleOf(const Resource& resource) const {
  return OwnedId(resource, owner_, backend_id());
}

absl::StatusOr<uint64_t> LocalDispatch::BufferSize(const Resource& resource) const {
  ASSIGN_OR_RETURN(uint64_t handle, HandleOf(resource));
  return session_->Size(handle);
}

absl::StatusOr<Resource> LocalDispatch::Allocate(size_t byte_len) {
  ASSIGN_OR_RETURN(uint64_t handle, session_->Allocate(byte_len));
  return MakeResource(owner_, handle);
}

absl::Status LocalDispatch::UploadAtMany(absl::Span<const RangedUpload> uploads) {
  std::vector<RangeRef> ranges;
  ranges.reserve(uploads.size());
  for (const RangedUpload& u : uploads) {
    ASSIGN_OR_RETURN(uint64_t handle, HandleOf(u.resource));
    ranges.push_back(RangeRef{handle, u.offset, u.bytes.size()});
  }
  return session_->Write(ranges, [&](size_t i, uint64_t offset, uint64_t length) {
    return uploads[i].bytes.subspan(offset, length);
  });
}

absl::Status LocalDispatch::Free(Resource resource) {
  ASSIGN_OR_RETURN(uint64_t handle, HandleOf(resource));
  return session_->Free(handle);
}

absl::Status LocalDispatch::Execute(absl::Span<const Step> prefix,
                                    absl::Span<const Step> repeated, uint32_t repeat_count,
                                    absl::Span<const ReadRange> ranges, ReadTarget target) {
  // Translate resources to session handles; the step spans point into `handles`, which is
  // sized up front so it never reallocates.
  size_t binding_count = 0;
  for (absl::Span<const Step> steps : {prefix, repeated}) {
    for (const Step& step : steps) binding_count += step.resources.size();
  }
  std::vector<uint64_t> handles;
  handles.reserve(binding_count);
  std::vector<StepRef> refs;
  refs.reserve(prefix.size() + repeated.size());
  for (absl::Span<const Step> steps : {prefix, repeated}) {
    for (const Step& step : steps) {
      const size_t first = handles.size();
      for (const Resource& r : step.resources) {
        ASSIGN_OR_RETURN(uint64_t handle, HandleOf(r));
        handles.push_back(handle);
      }
      refs.push_back(StepRef{step.program->kernel, step.program->params,
                             absl::MakeConstSpan(handles).subspan(first, step.resources.size()),
                             step.grid, step.program->version});
    }
  }
  std::vector<RangeRef> reads;
  reads.reserve(ranges.size());
  for (const ReadRange& r : ranges) {
    ASSIGN_OR_RETURN(uint64_t handle, HandleOf(r.resource));
    reads.push_back(RangeRef{handle, r.offset, r.length});
  }
  absl::Span<const StepRef> all = refs;
  std::atomic<bool> cancelled{false};
  {
    absl::MutexLock lock(&in_flight_mu_);
    in_flight_.push_back(&cancelled);
  }
  const absl::Status status = session_->Execute(
      all.subspan(0, prefix.size()), all.subspan(prefix.size()), repeat_count, reads,
      // Asked once per read, for all of it: the target's span covers it.
      [&](size_t i, uint64_t, uint64_t length) { return target(i, length); },
      Interrupt(/*stream=*/nullptr, &cancelled));
  absl::MutexLock lock(&in_flight_mu_);
  in_flight_.erase(std::find(in_flight_.begin(), in_flight_.end(), &cancelled));
  return status;
}

void LocalDispatch::Cancel() {
  absl::MutexLock lock(&in_flight_mu_);
  for (std::atomic<bool>* flag : in_flight_) flag->store(true);
}

}  // namespace sluice
