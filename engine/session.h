// A session: one client's resource table and device stream, and the executor that validates a
// whole operation (uploads, reads, a sequence of kernel steps with a repeated group) before
// enqueuing any of it, then runs it behind one synchronization. The daemon serves one Session
// per gRPC stream; LocalDispatch embeds one. Knows nothing of gRPC.
#ifndef SLUICE_ENGINE_SESSION_H_
#define SLUICE_ENGINE_SESSION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sluice/base/fair_share.h"
#include "sluice/base/interrupt.h"
#include "sluice/engine/device.h"
#include "sluice/engine/resource_table.h"
#include "sluice/kernels/catalog.h"
#include "sluice/proto/contract.h"

namespace sluice {

// Where the bytes of write range `index` from `offset` (within the range) come from: a span of
// at least one and at most `length` bytes, the rest of the range; the session asks again for
// what it did not get, so a range may arrive in pieces (an upload's chunks, say). Ranges of no
// bytes are not asked for. Called in order, only after every range has been validated and
// before anything is written; every span must stay valid until the write returns. A source
// that has no bytes returns an empty span: the write then fails with Internal, having written
// nothing. The mirror of ReadSink.
using ByteSource = absl::FunctionRef<absl::Span<const uint8_t>(size_t index, uint64_t offset,
                                                                uint64_t length)>;

// Where the bytes of read `index` from `offset` (within the read) land: a span of at least one
// and at most `length` bytes, the rest of the read; the session asks again for what it did not
// cover, so a read may land in pieces (a daemon's reply chunks, say). A read of no bytes is
// asked for once, with length 0 (an empty span will do). Called in order, only after the
// whole operation has been validated and before anything runs; every span must stay valid
// until the operation returns. A sink that cannot take the bytes returns an empty span: the
// operation then fails with Internal, having run nothing.
using ReadSink =
    absl::FunctionRef<absl::Span<uint8_t>(size_t index, uint64_t offset, uint64_t length)>;

class Session {
 public:
  struct Options {
    ResourceTable::Options table;
    uint64_t max_steps = 1 << 16;              // prefix + repeated steps per sequence
    uint64_t max_ranges = 1 << 16;             // reads per operation
    uint64_t max_read_bytes = ~uint64_t{0};    // bytes read back per operation
    // The client this session's device work is shared out by (see FairShare): each Execute
    // takes a turn of it. Null: the session runs whenever it has work.
    std::shared_ptr<FairShare::Member> share;
  };

  // InvalidArgument if `device` is null; errors from the device's CreateStream.
  static absl::StatusOr<std::unique_ptr<Session>> Create(std::shared_ptr<Device> device,
                                                         const Options& options);
  // Frees every buffer. No call may be running.
  ~Session();

  // Thread-safety: every method is thread-safe. Operations that use the device (Write, Read,
  // Execute) run one at a time in arrival order; Allocate, Free and Size do not wait for them,
  // and a Free of a buffer in use by running work is deferred until that work completes.

  // ResourceExhausted (quota, buffer limit or device memory); AlreadyExists when `chosen`, a
  // handle the client picked (0: the table picks), names a buffer of this session.
  absl::StatusOr<uint64_t> Allocate(uint64_t bytes, uint64_t chosen = 0);
  // NotFound for an unknown or already freed handle.
  absl::Status Free(uint64_t handle);
  // NotFound for an unknown handle.
  absl::StatusOr<uint64_t> Size(uint64_t handle) const;

  // Writes the bytes of every range (from `source`) into its buffer, then synchronizes once.
  // Every range is checked first, and an error names it ("upload range 2: ..."): NotFound
  // (handle), OutOfRange (range past the end); on any error nothing is written. The number of
  // ranges is not limited here: the bytes bound it, and the wire's limit on ranges per upload
  // is enforced where requests are assembled.
  absl::Status Write(absl::Span<const RangeRef> ranges, ByteSource source);

  // The checks Write makes of its ranges, with the same errors, without writing: for a caller
  // that wants to refuse a doomed upload before its data arrives. (Buffer sizes never change,
  // so ranges that fail here fail in Write too; Write checks again, as buffers may be freed.)
  absl::Status CheckUploadRanges(absl::Span<const RangeRef> ranges) const;
  // The same, taking the size of a handle from `queued` when it has one (a buffer whose
  // allocation is queued behind the check: a pipelined client's).
  absl::Status CheckUploadRanges(
      absl::Span<const RangeRef> ranges,
      absl::FunctionRef<std::optional<uint64_t>(uint64_t handle)> queued) const;

  // Reads every range, behind one synchronization. Errors as Execute's reads.
  absl::Status Read(absl::Span<const RangeRef> ranges, ReadSink sink);

  // Runs the prefix steps once, the repeated steps `repeat_count` times, then reads `reads`,
  // all behind one synchronization. Everything is validated before the first step runs, so a
  // failed validation changes nothing:
  //   NotFound         unknown kernel or handle
  //   InvalidArgument  binding or parameter count, too-small binding, parameter or grid out of
  //                    limits, too many steps or reads
  //   OutOfRange       a read past the end of its buffer
  //   ResourceExhausted  reads larger than max_read_bytes in total
  // Once `interrupt` stops: Cancelled or DeadlineExceeded, saying where. The work stops at the
  // next step, iteration or (on the CPU device) chunk of a pass; what ran stays, a step may have
  // run in part, and nothing is read.
  absl::Status Execute(absl::Span<const StepRef> prefix, absl::Span<const StepRef> repeated,
                       uint32_t repeat_count, absl::Span<const RangeRef> reads, ReadSink sink,
                       const Interrupt& interrupt = Interrupt());

  // The checks Execute (or, with no steps, Read) makes before anything runs, in its order and
  // with its errors, and nothing run: for a caller that runs a large request's reads in pieces
  // (a daemon that streams them, the steps before the first) and must refuse a bad request, as
  // Execute would, before the first piece.
  absl::Status CheckExecute(absl::Span<const StepRef> prefix, absl::Span<const StepRef> repeated,
                            absl::Span<const RangeRef> reads);
  // The first of those checks, which need the request's counts alone, with Execute's errors:
  // at most max_steps steps and max_ranges reads (InvalidArgument), and then, for each step in
  // order (`step_counts(s)`: its bindings and its parameters), no more bindings or parameters
  // than any kernel takes (kMaxBindings, kMaxParams; InvalidArgument naming the step). A
  // caller that holds the request in another form (a parsed message) makes them before it
  // copies the request out: what a hostile request makes it hold stays within these bounds.
  absl::Status CheckExecuteCounts(
      uint64_t prefix_steps, uint64_t repeated_steps, uint64_t reads,
      absl::FunctionRef<std::pair<uint64_t, uint64_t>(size_t step)> step_counts) const;

  // What an Execute of these steps holds while it runs beyond its request: each step's plan
  // (its kernel's arguments, with room for every binding, and its kernel's passes) and its
  // reference. A daemon counts it to the client whose request it is. Execute's NotFound for
  // the first step whose kernel the catalog lacks (such a request runs nothing).
  static absl::StatusOr<uint64_t> ExecutePlanBytes(absl::Span<const StepRef> prefix,
                                                   absl::Span<const StepRef> repeated);

  // Frees every buffer; returns how many. Work that is running keeps its buffers until done.
  size_t FreeAll() { return table_.FreeAll(); }

  Device& device() const { return *device_; }
  size_t buffer_count() const { return table_.buffer_count(); }
  uint64_t bytes_in_use() const { return table_.bytes_in_use(); }

 private:
  Session(std::shared_ptr<Device> device, std::unique_ptr<Stream> stream, const Options& options);

  // The checks of `reads` against their buffers' sizes (`size` of read i): in range, and at
  // most max_read_bytes in all.
  absl::Status CheckReadRanges(absl::Span<const RangeRef> reads,
                               absl::FunctionRef<uint64_t(size_t i)> size) const;

  // Execute's checks and plan (ExecutePlan, in session.cc): what it runs, once they pass.
  struct ExecutePlan;
  absl::StatusOr<ExecutePlan> PlanExecute(absl::Span<const StepRef> prefix,
                                          absl::Span<const StepRef> repeated,
                                          absl::Span<const RangeRef> reads);

  // Pins what an operation touches, or says which step binding or range named a bad handle.
  absl::StatusOr<ResourceTable::Pins> PinAll(absl::Span<const StepRef> prefix,
                                             absl::Span<const StepRef> repeated,
                                             absl::Span<const uint64_t> range_handles,
                                             const char* range_kind);

  const std::shared_ptr<Device> device_;
  const Options options_;
  ResourceTable table_;  // own locking

  // Unavailable once the stream's device failed or was reset since this session began. Needs
  // no lock (Stream::Usable is thread-safe), so Allocate does not wait for running work.
  absl::Status StreamUsable() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return stream_->Usable(); }

  absl::Mutex stream_mu_;
  const std::unique_ptr<Stream> stream_ ABSL_PT_GUARDED_BY(stream_mu_);
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_SESSION_H_
