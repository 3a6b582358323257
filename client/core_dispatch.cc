#include "sluice/client/core_dispatch.h"

#include <utility>

#include "sluice/base/status_macros.h"
#include "sluice/client/internal/call_checks.h"

namespace sluice {
namespace {

// Targets for the two kinds of output. Both are asked for exactly the range's length; a
// vector is sized to it (capacity reused), a span already is (CheckSpanOutputs).
auto IntoVectors(absl::Span<std::vector<uint8_t>* const> outputs) {
  return [outputs](size_t i, uint64_t length) {
    outputs[i]->resize(length);
    return absl::MakeSpan(*outputs[i]);
  };
}

auto IntoSpans(absl::Span<const absl::Span<uint8_t>> outputs) {
  return [outputs](size_t i, uint64_t length) {
    return outputs[i].size() == length ? outputs[i] : absl::Span<uint8_t>();
  };
}

}  // namespace

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

absl::Status CoreDispatch::DownloadRangesInto(absl::Span<const ReadRange> ranges,
                                              absl::Span<std::vector<uint8_t>* const> outputs) {
  RETURN_IF_ERROR(CheckOutputs(ranges.size(), outputs));
  return Read(ranges, IntoVectors(outputs));
}

absl::Status CoreDispatch::DownloadRangesIntoSpans(absl::Span<const ReadRange> ranges,
                                                   absl::Span<const absl::Span<uint8_t>> outputs) {
  RETURN_IF_ERROR(CheckSpanOutputs(ranges, outputs));
  return Read(ranges, IntoSpans(outputs));
}

absl::Status CoreDispatch::Dispatch(const Program& program, absl::Span<const Resource> resources,
                                    std::optional<Grid> grid_override) {
  const Step step{&program, resources, grid_override};
  return DispatchRepeatedSequenceReadRangesIntoSpans({&step, 1}, {}, 0, {}, {});
}

absl::Status CoreDispatch::DispatchSequenceReadRangesInto(
    absl::Span<const Step> steps, absl::Span<const ReadRange> read_ranges,
    absl::Span<std::vector<uint8_t>* const> outputs) {
  return DispatchRepeatedSequenceReadRangesInto(steps, {}, 0, read_ranges, outputs);
}

absl::Status CoreDispatch::DispatchRepeatedSequenceReadRangesInto(
    absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
    uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
    absl::Span<std::vector<uint8_t>* const> outputs) {
  RETURN_IF_ERROR(CheckOutputs(read_ranges.size(), outputs));
  RETURN_IF_ERROR(CheckSteps(prefix_steps));
  RETURN_IF_ERROR(CheckSteps(repeated_steps));
  return Execute(prefix_steps, repeated_steps, repeat_count, read_ranges, IntoVectors(outputs));
}

absl::Status CoreDispatch::DispatchRepeatedSequenceReadRangesIntoSpans(
    absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
    uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
    absl::Span<const absl::Span<uint8_t>> outputs) {
  RETURN_IF_ERROR(CheckSpanOutputs(read_ranges, outputs));
  RETURN_IF_ERROR(CheckSteps(prefix_steps));
  RETURN_IF_ERROR(CheckSteps(repeated_steps));
  return Execute(prefix_steps, repeated_steps, repeat_count, read_ranges, IntoSpans(outputs));
}

absl::Status CoreDispatch::Read(absl::Span<const ReadRange> ranges, ReadTarget target) {
  return Execute({}, {}, 0, ranges, target);
}

}  // namespace sluice
