#include "sluice/engine/session.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"

namespace sluice {
namespace {

// Prefixes `status` with where in the operation it arose, keeping its code.
absl::Status Annotate(const absl::Status& status, const std::string& where) {
  return absl::Status(status.code(), absl::StrFormat("%s: %s", where, status.message()));
}

absl::Status CheckUploadRange(size_t index, uint64_t size, const RangeRef& range) {
  absl::Status in_range = CheckRange(size, range.offset, range.length);
  if (!in_range.ok()) return Annotate(in_range, absl::StrFormat("upload range %d", index));
  return in_range;
}

std::string StepName(size_t index, size_t prefix_size) {
  return index < prefix_size ? absl::StrFormat("prefix step %d", index)
                             : absl::StrFormat("repeated step %d", index - prefix_size);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Create(std::shared_ptr<Device> device,
                                                         const Options& options) {
  if (device == nullptr) return absl::InvalidArgumentError("Session: no device");
  ASSIGN_OR_RETURN(std::unique_ptr<Stream> stream, device->CreateStream());
  return std::unique_ptr<Session>(new Session(std::move(device), std::move(stream), options));
}

Session::Session(std::shared_ptr<Device> device, std::unique_ptr<Stream> stream,
                 const Options& options)
    : device_(std::move(device)),
      options_(options),
      table_(device_.get(), options.table),
      stream_(std::move(stream)) {}

Session::~Session() = default;

absl::StatusOr<uint64_t> Session::Allocate(uint64_t bytes, uint64_t chosen) {
  // A session that outlived a device reset is lost: it must not take memory from new ones.
  // Asked again after the allocation, in case the reset came in between.
  RETURN_IF_ERROR(StreamUsable());
  ASSIGN_OR_RETURN(uint64_t handle, table_.Allocate(bytes, chosen));
  if (absl::Status usable = StreamUsable(); !usable.ok()) {
    table_.Free(handle).IgnoreError();
    return usable;
  }
  return handle;
}

absl::Status Session::Free(uint64_t handle) { return table_.Free(handle); }

absl::StatusOr<uint64_t> Session::Size(uint64_t handle) const { return table_.Size(handle); }

absl::StatusOr<ResourceTable::Pins> Session::PinAll(absl::Span<const StepRef> prefix,
                                                    absl::Span<const StepRef> repeated,
                                                    absl::Span<const uint64_t> range_handles,
                                                    const char* range_kind) {
  std::vector<uint64_t> handles;
  for (absl::Span<const StepRef> steps : {prefix, repeated}) {
    for (const StepRef& step : steps) handles.insert(handles.end(), step.handles.begin(),
                                                     step.handles.end());
  }
  handles.insert(handles.end(), range_handles.begin(), range_handles.end());
  size_t failed = 0;
  absl::StatusOr<ResourceTable::Pins> pins = table_.Pin(handles, &failed);
  if (pins.ok()) return pins;
  // Say which step binding or range named the unknown handle.
  size_t index = 0;
  size_t step_index = 0;
  for (absl::Span<const StepRef> steps : {prefix, repeated}) {
    for (const StepRef& step : steps) {
      if (failed < index + step.handles.size()) {
        return Annotate(pins.status(), absl::StrFormat("%s binding %d",
                                                       StepName(step_index, prefix.size()),
                                                       failed - index));
      }
      index += step.handles.size();
      ++step_index;
    }
  }
  return Annotate(pins.status(), absl::StrFormat("%s %d", range_kind, failed - index));
}

absl::Status Session::Write(absl::Span<const RangeRef> ranges, ByteSource source) {
  std::vector<uint64_t> handles;
  handles.reserve(ranges.size());
  for (const RangeRef& r : ranges) handles.push_back(r.handle);
  ASSIGN_OR_RETURN(ResourceTable::Pins pins, PinAll({}, {}, handles, "upload range"));
  for (size_t i = 0; i < ranges.size(); ++i) {
    RETURN_IF_ERROR(CheckUploadRange(i, pins.buffers()[i].bytes, ranges[i]));
  }
  struct Piece {
    size_t range;
    uint64_t offset;  // within the range
    absl::Span<const uint8_t> bytes;
  };
  std::vector<Piece> pieces;
  pieces.reserve(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    for (uint64_t done = 0; done < ranges[i].length;) {
      const absl::Span<const uint8_t> piece = source(i, done, ranges[i].length - done);
      if (piece.empty() || piece.size() > ranges[i].length - done) {
        return absl::InternalError(absl::StrFormat("upload range %d: the source gave %d bytes for %d",
                                                   i, piece.size(), ranges[i].length - done));
      }
      pieces.push_back(Piece{i, done, piece});
      done += piece.size();
    }
  }
  absl::MutexLock lock(&stream_mu_);
  absl::Status status;
  for (size_t p = 0; p < pieces.size() && status.ok(); ++p) {
    const Piece& piece = pieces[p];
    status = stream_->CopyIn(pins.buffers()[piece.range], ranges[piece.range].offset + piece.offset,
                             piece.bytes);
  }
  // Always wait before unpinning: enqueued copies may still be reading caller memory.
  absl::Status synced = stream_->Synchronize();
  return status.ok() ? synced : status;
}

absl::Status Session::CheckUploadRanges(absl::Span<const RangeRef> ranges) const {
  return CheckUploadRanges(ranges, [](uint64_t) { return std::optional<uint64_t>(); });
}

absl::Status Session::CheckUploadRanges(
    absl::Span<const RangeRef> ranges,
    absl::FunctionRef<std::optional<uint64_t>(uint64_t handle)> queued) const {
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (const std::optional<uint64_t> size = queued(ranges[i].handle); size.has_value()) {
      RETURN_IF_ERROR(CheckUploadRange(i, *size, ranges[i]));
      continue;
    }
    absl::StatusOr<uint64_t> size = table_.Size(ranges[i].handle);
    if (!size.ok()) return Annotate(size.status(), absl::StrFormat("upload range %d", i));
    RETURN_IF_ERROR(CheckUploadRange(i, *size, ranges[i]));
  }
  return absl::OkStatus();
}

absl::Status Session::CheckReadRanges(absl::Span<const RangeRef> reads,
                                      absl::FunctionRef<uint64_t(size_t i)> size) const {
  uint64_t read_bytes = 0;
  for (size_t i = 0; i < reads.size(); ++i) {
    absl::Status in_range = CheckRange(size(i), reads[i].offset, reads[i].length);
    if (!in_range.ok()) return Annotate(in_range, absl::StrFormat("read %d", i));
    if (reads[i].length > options_.max_read_bytes - read_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "reads total more than %d bytes in one operation", options_.max_read_bytes));
    }
    read_bytes += reads[i].length;
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Session::ExecutePlanBytes(absl::Span<const StepRef> prefix,
                                                   absl::Span<const StepRef> repeated) {
  uint64_t bytes = 0;
  for (size_t s = 0; s < prefix.size() + repeated.size(); ++s) {
    const StepRef& step = s < prefix.size() ? prefix[s] : repeated[s - prefix.size()];
    absl::StatusOr<const KernelSpec*> spec = KernelCatalog::Builtin().Find(step.kernel);
    if (!spec.ok()) return Annotate(spec.status(), StepName(s, prefix.size()));
    // The passes' array is an allocation of its own: 16 bytes for the allocator's rounding.
    bytes += sizeof(PlannedStep) + sizeof(StepRef) + (*spec)->passes.size() * sizeof(PassLaunch) +
             16;
  }
  return bytes;
}

absl::Status Session::Read(absl::Span<const RangeRef> ranges, ReadSink sink) {
  return Execute({}, {}, 0, ranges, sink);
}

// What Execute checked and planned before anything runs: its buffers pinned (the steps'
// bindings in order, then the reads'), its steps planned.
struct Session::ExecutePlan {
  ResourceTable::Pins pins;
  std::vector<PlannedStep> steps;
  size_t first_read = 0;  // the first read's buffer among the pins'
};

absl::Status Session::CheckExecuteCounts(
    uint64_t prefix_steps, uint64_t repeated_steps, uint64_t reads,
    absl::FunctionRef<std::pair<uint64_t, uint64_t>(size_t step)> step_counts) const {
  const uint64_t step_count = prefix_steps + repeated_steps;
  if (step_count > options_.max_steps) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d steps in one sequence; the limit is %d", step_count, options_.max_steps));
  }
  if (reads > options_.max_ranges) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d reads in one operation; the limit is %d", reads, options_.max_ranges));
  }
  for (size_t s = 0; s < step_count; ++s) {
    const auto [bindings, params] = step_counts(s);
    if (bindings > static_cast<uint64_t>(kMaxBindings) ||
        params > static_cast<uint64_t>(kMaxParams)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %d bindings and %d parameters; no kernel takes more than %d and %d",
          StepName(s, prefix_steps), bindings, params, kMaxBindings, kMaxParams));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Session::ExecutePlan> Session::PlanExecute(absl::Span<const StepRef> prefix,
                                                          absl::Span<const StepRef> repeated,
                                                          absl::Span<const RangeRef> reads) {
  const size_t step_count = prefix.size() + repeated.size();
  const auto step_at = [&](size_t s) -> const StepRef& {
    return s < prefix.size() ? prefix[s] : repeated[s - prefix.size()];
  };
  RETURN_IF_ERROR(CheckExecuteCounts(prefix.size(), repeated.size(), reads.size(), [&](size_t s) {
    return std::pair<uint64_t, uint64_t>{step_at(s).handles.size(), step_at(s).params.size()};
  }));
  std::vector<uint64_t> read_handles;
  read_handles.reserve(reads.size());
  for (const RangeRef& r : reads) read_handles.push_back(r.handle);
  ASSIGN_OR_RETURN(ResourceTable::Pins pins, PinAll(prefix, repeated, read_handles, "read"));
  const absl::Span<const DeviceBuffer> buffers = pins.buffers();

  // Validate and plan every step before anything is enqueued.
  std::vector<PlannedStep> planned(step_count);
  std::vector<uint64_t> binding_bytes;
  size_t next_buffer = 0;
  for (size_t s = 0; s < step_count; ++s) {
    const StepRef& step = step_at(s);
    absl::StatusOr<const KernelSpec*> spec = KernelCatalog::Builtin().Find(step.kernel);
    if (!spec.ok()) return Annotate(spec.status(), StepName(s, prefix.size()));
    if (step.version != 0 && step.version != (*spec)->version) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s: kernel %s is version %d on this backend; the caller was written for version %d",
          StepName(s, prefix.size()), (*spec)->name, (*spec)->version, step.version));
    }
    absl::Span<const DeviceBuffer> bound = buffers.subspan(next_buffer, step.handles.size());
    next_buffer += step.handles.size();
    binding_bytes.clear();
    for (const DeviceBuffer& b : bound) binding_bytes.push_back(b.bytes);
    const KernelCall call{binding_bytes, step.params, step.handles};
    absl::Status valid = KernelCatalog::Validate(**spec, call, step.grid);
    if (!valid.ok()) return Annotate(valid, StepName(s, prefix.size()));
    if ((*spec)->loop_guard && s != prefix.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %s is a loop guard; it can only be the first step of a repeated group",
          StepName(s, prefix.size()), (*spec)->name));
    }
    PlannedStep& p = planned[s];
    p.kernel = KernelId{(*spec)->name, (*spec)->version};
    p.args = KernelArgs{};
    for (size_t b = 0; b < bound.size(); ++b) p.args.binding[b] = {bound[b].data, bound[b].bytes};
    for (size_t i = 0; i < step.params.size(); ++i) p.args.param[i] = step.params[i];
    p.passes = KernelCatalog::Plan(**spec, call, step.grid);
    if ((*spec)->loop_guard) {
      p.guard = reinterpret_cast<const uint32_t*>(bound[0].data) + step.params[0];
    }
  }

  RETURN_IF_ERROR(CheckReadRanges(
      reads, [&](size_t i) { return buffers[next_buffer + i].bytes; }));
  return ExecutePlan{std::move(pins), std::move(planned), next_buffer};
}

absl::Status Session::CheckExecute(absl::Span<const StepRef> prefix,
                                   absl::Span<const StepRef> repeated,
                                   absl::Span<const RangeRef> reads) {
  return PlanExecute(prefix, repeated, reads).status();
}

absl::Status Session::Execute(absl::Span<const StepRef> prefix, absl::Span<const StepRef> repeated,
                              uint32_t repeat_count, absl::Span<const RangeRef> reads,
                              ReadSink sink, const Interrupt& interrupt) {
  ASSIGN_OR_RETURN(ExecutePlan plan, PlanExecute(prefix, repeated, reads));
  const std::vector<PlannedStep>& planned = plan.steps;
  const absl::Span<const DeviceBuffer> read_buffers = plan.pins.buffers().subspan(plan.first_read);
  struct Piece {
    size_t read;
    uint64_t offset;  // within the read
    absl::Span<uint8_t> destination;
  };
  std::vector<Piece> pieces;
  pieces.reserve(reads.size());
  for (size_t i = 0; i < reads.size(); ++i) {
    if (reads[i].length == 0) sink(i, 0, 0);
    for (uint64_t done = 0; done < reads[i].length;) {
      const absl::Span<uint8_t> piece = sink(i, done, reads[i].length - done);
      if (piece.empty() || piece.size() > reads[i].length - done) {
        return absl::InternalError(absl::StrFormat(
            "read %d: the sink gave %d bytes for %d", i, piece.size(), reads[i].length - done));
      }
      pieces.push_back(Piece{i, done, piece});
      done += piece.size();
    }
  }

  absl::MutexLock lock(&stream_mu_);
  absl::Status status;
  // The steps share the device with other clients' work: they run in this session's client's
  // turns (the device takes the turn at the first step, and it is given up once they are done:
  // after the synchronization, on a device that runs them asynchronously).
  FairShare::Turn turn(options_.share.get());
  const Interrupt in_turn = interrupt.WithTurn(&turn);
  for (size_t s = 0; s < prefix.size() && status.ok(); ++s) {
    status = stream_->Launch(planned[s], in_turn);
    if (!status.ok()) status = Annotate(status, StepName(s, prefix.size()));
  }
  if (status.ok() && repeat_count > 0 && !repeated.empty()) {
    // A group whose steps run no pass (a loop guard alone) changes nothing in an iteration:
    // one is all it runs, as ResidentDispatch's own loop does (2^32 - 1 of them held the CPU
    // device for about a minute).
    const auto runs_nothing = [](const PlannedStep& step) { return step.passes.empty(); };
    const uint32_t count =
        std::all_of(planned.begin() + static_cast<ptrdiff_t>(prefix.size()), planned.end(),
                    runs_nothing)
            ? 1
            : repeat_count;
    status = stream_->LaunchRepeated(absl::MakeConstSpan(planned).subspan(prefix.size()), count,
                                     in_turn);
  }
  for (size_t p = 0; p < pieces.size() && status.ok(); ++p) {
    const Piece& piece = pieces[p];
    status = stream_->CopyOut(read_buffers[piece.read], reads[piece.read].offset + piece.offset,
                              piece.destination);
  }
  // Always wait before unpinning, also after an error: enqueued work may still run.
  absl::Status synced = stream_->Synchronize();
  turn.Release();
  return status.ok() ? synced : status;
}

}  // namespace sluice
