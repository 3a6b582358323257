#include "client/core_dispatch.h"

#include <utility>

#include "base/status_macros.h"

namespace sluice {

absl::Status CoreDispatch::Upload(const Resource& resource, absl::Span<const uint8_t> bytes) {
  const RangedUpload upload{resource, 0, bytes};
  return UploadAtMany({&upload, 1});
}

absl::Status CoreDispatch::UploadMany(absl::Span<const BufferUpload> uploads) {
  std::vector<RangedUpload> ranged;
  ranged.reserve(uploads.size());
  for (const BufferUpload& u : uploads) ranged.push_back(RangedUpload{u.resource, 0, u.bytes});
  return UploadAtMany(ranged);
}

absl::StatusOr<std::vector<uint8_t>> CoreDispatch::Download(const Resource& resource) {
  std::vector<uint8_t> out;
  RETURN_IF_ERROR(DownloadInto(resource, &out));
  return out;
}

absl::Status CoreDispatch::DownloadInto(const Resource& resource, std::vector<uint8_t>* output) {
  ASSIGN_OR_RETURN(const uint64_t size, BufferSize(resource));
  return DownloadRangeInto(resource, 0, size, output);
}

absl::StatusOr<std::vector<uint8_t>> CoreDispatch::DownloadRange(const Resource& resource,
                                                                 size_t byte_offset,
                                                                 size_t byte_len) {
  std::vector<uint8_t> out;
  RETURN_IF_ERROR(DownloadRangeInto(resource, byte_offset, byte_len, &out));
  return out;
}

absl::Status CoreDispatch::DownloadRangeInto(const Resource& resource, size_t byte_offset,
                                             size_t byte_len, std::vector<uint8_t>* output) {
  const ReadRange range{resource, byte_offset, byte_len};
  return DownloadRangesInto({&range, 1}, {&output, 1});
}

absl::Status CoreDispatch::Dispatch(const Program& program, absl::Span<const Resource> resources,
                                    std::optional<Grid> grid_override) {
  const Step step{&program, resources, grid_override};
  return DispatchRepeatedSequenceReadRangesInto({&step, 1}, {}, 0, {}, {});
}

absl::Status CoreDispatch::DispatchSequenceReadRangesInto(
    absl::Span<const Step> steps, absl::Span<const ReadRange> read_ranges,
    absl::Span<std::vector<uint8_t>* const> outputs) {
  return DispatchRepeatedSequenceReadRangesInto(steps, {}, 0, read_ranges, outputs);
}

}  // namespace sluice
