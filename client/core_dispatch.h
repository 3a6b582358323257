// CoreDispatch: a ResidentDispatch built on five batched operations (allocate, free, ranged
// uploads, ranged reads, repeated sequences with reads) and a buffer's size. Every other method
// of the interface (Upload, UploadMany, Download, DownloadInto, DownloadRange,
// DownloadRangeInto, Dispatch, DispatchSequenceReadRangesInto) is implemented here, once, over
// those, so every Sluice dispatcher (LocalDispatch, RemoteDispatch) behaves the same in them:
// one batch, one synchronization, the same checks and codes.
#ifndef SLUICE_CLIENT_CORE_DISPATCH_H_
#define SLUICE_CLIENT_CORE_DISPATCH_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/resident_dispatch.h"

namespace sluice {

class CoreDispatch : public ResidentDispatch {
 public:
  // ---- The core: what each dispatcher implements. ----
  absl::StatusOr<Resource> Allocate(size_t byte_len) override = 0;
  absl::Status Free(Resource resource) override = 0;
  absl::Status UploadAtMany(absl::Span<const RangedUpload> uploads) override = 0;
  absl::Status DownloadRangesInto(absl::Span<const ReadRange> ranges,
                                  absl::Span<std::vector<uint8_t>* const> outputs) override = 0;
  absl::Status DispatchRepeatedSequenceReadRangesInto(
      absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
      uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
      absl::Span<std::vector<uint8_t>* const> outputs) override = 0;

  // ---- Over the core, once. ----
  absl::Status Upload(const Resource& resource, absl::Span<const uint8_t> bytes) final;
  absl::Status UploadMany(absl::Span<const BufferUpload> uploads) final;
  absl::StatusOr<std::vector<uint8_t>> Download(const Resource& resource) final;
  absl::Status DownloadInto(const Resource& resource, std::vector<uint8_t>* output) final;
  absl::StatusOr<std::vector<uint8_t>> DownloadRange(const Resource& resource, size_t byte_offset,
                                                     size_t byte_len) final;
  absl::Status DownloadRangeInto(const Resource& resource, size_t byte_offset, size_t byte_len,
                                 std::vector<uint8_t>* output) final;
  absl::Status Dispatch(const Program& program, absl::Span<const Resource> resources,
                        std::optional<Grid> grid_override) final;
  absl::Status DispatchSequenceReadRangesInto(
      absl::Span<const Step> steps, absl::Span<const ReadRange> read_ranges,
      absl::Span<std::vector<uint8_t>* const> outputs) final;

 protected:
  // The size of the buffer `resource` names: NotFound (unknown or freed, or a default
  // Resource), FailedPrecondition (another dispatcher's).
  virtual absl::StatusOr<uint64_t> BufferSize(const Resource& resource) const = 0;
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_CORE_DISPATCH_H_
