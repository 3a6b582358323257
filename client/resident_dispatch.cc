#include "sluice/client/resident_dispatch.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"
#include "sluice/client/internal/call_checks.h"

namespace sluice {

absl::Status CheckOutputs(size_t ranges, absl::Span<std::vector<uint8_t>* const> outputs) {
  if (outputs.size() != ranges) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d read ranges but %d outputs", ranges, outputs.size()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("output %d is null", i));
    }
  }
  // Each read is sized into its own vector; one vector named twice would be resized under the
  // other read's feet.
  std::vector<std::vector<uint8_t>*> sorted(outputs.begin(), outputs.end());
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return absl::InvalidArgumentError("the same output vector is given for two read ranges");
  }
  return absl::OkStatus();
}

absl::Status CheckSpanOutputs(absl::Span<const ReadRange> ranges,
                              absl::Span<const absl::Span<uint8_t>> outputs) {
  if (outputs.size() != ranges.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d read ranges but %d outputs", ranges.size(), outputs.size()));
  }
  std::vector<absl::Span<uint8_t>> nonempty;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].size() != ranges[i].length) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "output %d holds %d bytes; its range is %d bytes", i, outputs[i].size(),
          ranges[i].length));
    }
    if (outputs[i].empty()) continue;
    if (outputs[i].data() == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("output %d is null", i));
    }
    nonempty.push_back(outputs[i]);
  }
  // Two reads landing in the same bytes would leave them to whichever came last.
  std::sort(nonempty.begin(), nonempty.end(),
            [](absl::Span<uint8_t> a, absl::Span<uint8_t> b) { return a.data() < b.data(); });
  for (size_t i = 1; i < nonempty.size(); ++i) {
    if (nonempty[i - 1].data() + nonempty[i - 1].size() > nonempty[i].data()) {
      return absl::InvalidArgumentError("two outputs overlap");
    }
  }
  return absl::OkStatus();
}

absl::Status OutputRefused(size_t index) {
  return absl::InternalError(
      absl::StrFormat("output %d cannot take the bytes of its read", index));
}

absl::Status CheckSteps(absl::Span<const Step> steps) {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].program == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("step %d has no program", i));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ResidentDispatch::OwnedId(const Resource& resource, uint64_t owner,
                                                   std::string_view backend_id) {
  if (resource.owner_ == owner && owner != 0) return resource.id_;
  if (resource.owner_ == 0) {
    return absl::NotFoundError("the resource refers to no buffer (default-constructed)");
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "the resource belongs to another dispatcher instance, not this one (%s)", backend_id));
}

std::string_view ResidentDispatch::backend_version() const { return "unversioned"; }

absl::Status ResidentDispatch::UploadAtMany(absl::Span<const RangedUpload> uploads) {
  std::vector<BufferUpload> whole;
  whole.reserve(uploads.size());
  for (size_t i = 0; i < uploads.size(); ++i) {
    if (uploads[i].offset != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "upload %d: this dispatcher supports only zero offsets in UploadAtMany (got %d)", i,
          uploads[i].offset));
    }
    whole.push_back(BufferUpload{uploads[i].resource, uploads[i].bytes});
  }
  return UploadMany(whole);
}

absl::Status ResidentDispatch::DownloadRangesInto(absl::Span<const ReadRange> ranges,
                                                  absl::Span<std::vector<uint8_t>* const> outputs) {
  RETURN_IF_ERROR(CheckOutputs(ranges.size(), outputs));
  for (size_t i = 0; i < ranges.size(); ++i) {
    RETURN_IF_ERROR(
        DownloadRangeInto(ranges[i].resource, ranges[i].offset, ranges[i].length, outputs[i]));
  }
  return absl::OkStatus();
}

absl::Status ResidentDispatch::DispatchSequenceReadRangesInto(
    absl::Span<const Step> steps, absl::Span<const ReadRange> read_ranges,
    absl::Span<std::vector<uint8_t>* const> outputs) {
  RETURN_IF_ERROR(CheckOutputs(read_ranges.size(), outputs));
  RETURN_IF_ERROR(CheckSteps(steps));
  for (const Step& step : steps) {
    RETURN_IF_ERROR(Dispatch(*step.program, step.resources, step.grid));
  }
  return DownloadRangesInto(read_ranges, outputs);
}

absl::Status ResidentDispatch::DispatchRepeatedSequenceReadRangesInto(
    absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
    uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
    absl::Span<std::vector<uint8_t>* const> outputs) {
  RETURN_IF_ERROR(CheckOutputs(read_ranges.size(), outputs));
  RETURN_IF_ERROR(CheckSteps(prefix_steps));
  RETURN_IF_ERROR(CheckSteps(repeated_steps));
  // A loop guard is not dispatched: its word is read before each iteration. Misplaced or
  // malformed guards are refused before anything runs, as Sluice dispatchers do.
  const auto is_guard = [](const Step& step) { return step.program->kernel == kLoopGuardKernel; };
  const bool guarded = !repeated_steps.empty() && is_guard(repeated_steps.front());
  if (std::any_of(prefix_steps.begin(), prefix_steps.end(), is_guard) ||
      std::any_of(repeated_steps.begin() + (guarded ? 1 : 0), repeated_steps.end(), is_guard)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is a loop guard; it can only be the first step of a repeated group",
        kLoopGuardKernel));
  }
  const Step* guard = guarded ? &repeated_steps.front() : nullptr;
  std::vector<uint8_t> word;
  // Reads the guard word into `*value`; a word outside its buffer is InvalidArgument.
  const auto read_guard = [&](uint32_t* value) -> absl::Status {
    const uint64_t index = guard->program->params[0];
    if (index > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: index %d exceeds its limit", kLoopGuardKernel, index));
    }
    absl::Status read = DownloadRangeInto(guard->resources[0], 4 * index, 4, &word);
    if (read.code() == absl::StatusCode::kOutOfRange) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: index %d is not inside word (%s)", kLoopGuardKernel, index, read.message()));
    }
    RETURN_IF_ERROR(read);
    if (word.size() != sizeof(*value)) {
      return absl::InternalError("the dispatcher returned a guard word of the wrong size");
    }
    std::memcpy(value, word.data(), sizeof(*value));
    return absl::OkStatus();
  };
  uint32_t value = 0;
  if (guard != nullptr) {
    if (guard->resources.size() != 1 || guard->program->params.size() != 1 || guard->grid) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: takes one binding and one parameter, and no grid", kLoopGuardKernel));
    }
    RETURN_IF_ERROR(read_guard(&value));  // checks the word before the prefix runs
  }
  for (const Step& step : prefix_steps) {
    RETURN_IF_ERROR(Dispatch(*step.program, step.resources, step.grid));
  }
  const absl::Span<const Step> body =
      guard != nullptr ? repeated_steps.subspan(1) : repeated_steps;
  for (uint32_t i = 0; i < repeat_count; ++i) {
    if (guard != nullptr) {
      // The prefix may have written the word; after that only the body can.
      if (i > 0 && body.empty()) break;
      if (i > 0 || !prefix_steps.empty()) RETURN_IF_ERROR(read_guard(&value));
      if (value == 0) break;
    }
    for (const Step& step : body) {
      RETURN_IF_ERROR(Dispatch(*step.program, step.resources, step.grid));
    }
  }
  return DownloadRangesInto(read_ranges, outputs);
}

// Reads through vectors (the seed's forms), then copies into the caller's memory.
absl::Status ResidentDispatch::DownloadRangesIntoSpans(
    absl::Span<const ReadRange> ranges, absl::Span<const absl::Span<uint8_t>> outputs) {
  return DispatchRepeatedSequenceReadRangesIntoSpans({}, {}, 0, ranges, outputs);
}

absl::Status ResidentDispatch::DispatchRepeatedSequenceReadRangesIntoSpans(
    absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
    uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
    absl::Span<const absl::Span<uint8_t>> outputs) {
  RETURN_IF_ERROR(CheckSpanOutputs(read_ranges, outputs));
  std::vector<std::vector<uint8_t>> read(outputs.size());
  std::vector<std::vector<uint8_t>*> into;
  into.reserve(read.size());
  for (std::vector<uint8_t>& r : read) into.push_back(&r);
  RETURN_IF_ERROR(prefix_steps.empty() && repeated_steps.empty()
                      ? DownloadRangesInto(read_ranges, into)
                      : DispatchRepeatedSequenceReadRangesInto(prefix_steps, repeated_steps,
                                                               repeat_count, read_ranges, into));
  for (size_t i = 0; i < read.size(); ++i) {
    if (read[i].size() != outputs[i].size()) {
      return absl::InternalError(absl::StrFormat(
          "the dispatcher read %d bytes for range %d of %d", read[i].size(), i,
          outputs[i].size()));
    }
    if (!read[i].empty()) std::memcpy(outputs[i].data(), read[i].data(), read[i].size());
  }
  return absl::OkStatus();
}

absl::Status ResidentDispatch::DownloadRangeIntoSpan(const Resource& resource, size_t byte_offset,
                                                     absl::Span<uint8_t> output) {
  const ReadRange range{resource, byte_offset, output.size()};
  return DownloadRangesIntoSpans({&range, 1}, {&output, 1});
}

absl::Status ResidentDispatch::DispatchSequenceReadRangesIntoSpans(
    absl::Span<const Step> steps, absl::Span<const ReadRange> read_ranges,
    absl::Span<const absl::Span<uint8_t>> outputs) {
  return DispatchRepeatedSequenceReadRangesIntoSpans(steps, {}, 0, read_ranges, outputs);
}

}  // namespace sluice
