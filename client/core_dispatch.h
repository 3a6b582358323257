// CoreDispatch: a ResidentDispatch built on four operations (allocate, free, ranged uploads,
// and a repeated sequence whose reads land where a target says), optionally a reads-only form
// of the last, and a buffer's size. Every other method of the interface (Upload, UploadMany,
// Download*, Dispatch, the sequence forms, the reads into vectors and into caller-owned spans)
// is implemented here, once, over those, so every Sluice dispatcher (LocalDispatch,
// RemoteDispatch) behaves the same in them: one batch, one synchronization, the same checks
// and codes, and reads that land straight in the caller's memory.
#ifndef SLUICE_CLIENT_CORE_DISPATCH_H_
#define SLUICE_CLIENT_CORE_DISPATCH_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sluice/client/resident_dispatch.h"

namespace sluice {

class CoreDispatch : public ResidentDispatch {
 public:
  // ---- The core: what each dispatcher implements. ----
  absl::StatusOr<Resource> Allocate(size_t byte_len) override = 0;
  absl::Status Free(Resource resource) override = 0;
  absl::Status UploadAtMany(absl::Span<const RangedUpload> uploads) override = 0;

  // ---- Over the core, once. ----
  absl::Status Upload(const Resource& resource, absl::Span<const uint8_t> bytes) final;
  absl::Status UploadMany(absl::Span<const BufferUpload> uploads) final;
  absl::StatusOr<std::vector<uint8_t>> Download(const Resource& resource) final;
  absl::Status DownloadInto(const Resource& resource, std::vector<uint8_t>* output) final;
  absl::StatusOr<std::vector<uint8_t>> DownloadRange(const Resource& resource, size_t byte_offset,
                                                     size_t byte_len) final;
  absl::Status DownloadRangeInto(const Resource& resource, size_t byte_offset, size_t byte_len,
                                 std::vector<uint8_t>* output) final;
  absl::Status DownloadRangesInto(absl::Span<const ReadRange> ranges,
                                  absl::Span<std::vector<uint8_t>* const> outputs) final;
  absl::Status DownloadRangesIntoSpans(absl::Span<const ReadRange> ranges,
                                       absl::Span<const absl::Span<uint8_t>> outputs) final;
  absl::Status Dispatch(const Program& program, absl::Span<const Resource> resources,
                        std::optional<Grid> grid_override) final;
  absl::Status DispatchSequenceReadRangesInto(
      absl::Span<const Step> steps, absl::Span<const ReadRange> read_ranges,
      absl::Span<std::vector<uint8_t>* const> outputs) final;
  absl::Status DispatchRepeatedSequenceReadRangesInto(
      absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
      uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
      absl::Span<std::vector<uint8_t>* const> outputs) final;
  absl::Status DispatchRepeatedSequenceReadRangesIntoSpans(
      absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
      uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
      absl::Span<const absl::Span<uint8_t>> outputs) final;

 protected:
  // Where read `index` of a call lands: exactly `length` bytes (its range's) of the caller's
  // memory, valid until the call returns. Asked once per read, only once the call is known to
  // be valid (a remote dispatcher asks when the reply's first bytes arrive, or at its end when
  // it has none), never after the call returns; an empty span for a nonempty read means the
  // caller cannot take it (then Internal).
  using ReadTarget = absl::FunctionRef<absl::Span<uint8_t>(size_t index, uint64_t length)>;

  // Runs `prefix` once and `repeated` `repeat_count` times, then reads `ranges` into `target`,
  // with the interface's contract (DispatchRepeatedSequenceReadRangesInto). Called with the
  // call's shape checked: every step names a program.
  virtual absl::Status Execute(absl::Span<const Step> prefix, absl::Span<const Step> repeated,
                               uint32_t repeat_count, absl::Span<const ReadRange> ranges,
                               ReadTarget target) = 0;
  // Reads only (DownloadRangesInto's contract). The default is Execute with no steps.
  virtual absl::Status Read(absl::Span<const ReadRange> ranges, ReadTarget target);

  // The size of the buffer `resource` names: NotFound (unknown or freed, or a default
  // Resource), FailedPrecondition (another dispatcher's).
  virtual absl::StatusOr<uint64_t> BufferSize(const Resource& resource) const = 0;
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_CORE_DISPATCH_H_
