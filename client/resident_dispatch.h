// sluice::ResidentDispatch: the resident-buffer dispatch interface an IFDS analyzer is written
// against (allocate, upload, ranged download, dispatch, dispatch sequences, repeated sequences),
// one virtual method per method of the IfdsResidentDispatch trait. Implementations:
// LocalDispatch (in-process, over a Device) and RemoteDispatch (one sluiced session).
//
// Status codes, the same for every implementation:
//   NotFound            unknown or freed resource; unknown kernel
//   FailedPrecondition  a resource issued by another dispatcher instance; a program pinned to a
//                       kernel version the backend does not have (Program::version)
//   OutOfRange          a byte range that does not lie inside its buffer (reads and writes)
//   InvalidArgument     a bad program (binding or parameter count, too-small binding,
//                       parameter or grid out of limits), mismatched output count or size,
//                       overlapping outputs, bad offset
//   ResourceExhausted   device memory, quota or request-size limits
//   Unavailable         the daemon or the session is gone (RemoteDispatch)
//   Cancelled           the session was cancelled while the call ran
// A call that fails validation changes nothing.
#ifndef SLUICE_CLIENT_RESIDENT_DISPATCH_H_
#define SLUICE_CLIENT_RESIDENT_DISPATCH_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sluice/kernels/grid.h"
#include "sluice/kernels/kernel_id.h"

namespace sluice {

// An opaque handle to a resident buffer: copyable, comparable, meaningful only to the
// dispatcher instance that issued it. A default-constructed Resource refers to nothing.
class Resource {
 public:
  Resource() = default;
  // The issuing dispatcher instance (0: none) and its id for the buffer (for RemoteDispatch,
  // the session's handle on the wire), for logs and tests.
  uint64_t owner() const { return owner_; }
  uint64_t id() const { return id_; }
  friend bool operator==(const Resource&, const Resource&) = default;

 private:
  friend class ResidentDispatch;  // dispatchers make them (ResidentDispatch::MakeResource)
  friend struct CResources;       // the C ABI (client/c/) carries them as their two numbers
  Resource(uint64_t owner, uint64_t id) : owner_(owner), id_(id) {}
  uint64_t owner_ = 0;
  uint64_t id_ = 0;
};

// A kernel from the catalog (see `sluice info`), its scalar parameters in order, and the
// kernel version the caller was written for (0: whichever the backend has; another version is
// FailedPrecondition naming the kernel).
struct Program {
  std::string kernel;
  std::vector<uint64_t> params;
  uint32_t version = 0;

  // The kernel `id` (a constant next to its body in kernels/bodies/*.h), pinned to its version.
  static Program Of(const KernelId& id, std::vector<uint64_t> params = {}) {
    return Program{std::string(id.name), std::move(params), id.version};
  }
};

// The catalog's loop guard: one u32 binding `word`, one parameter `index`; only valid as the
// first step of a repeated group (see DispatchRepeatedSequenceReadRangesInto).
inline constexpr std::string_view kLoopGuardKernel = kLoopGuardKernelId.name;

// One buffer's bytes for UploadMany: written at offset 0.
struct BufferUpload {
  Resource resource;
  absl::Span<const uint8_t> bytes;
};

// One byte range to write for UploadAtMany.
struct RangedUpload {
  Resource resource;
  size_t offset = 0;
  absl::Span<const uint8_t> bytes;
};

// One byte range to read.
struct ReadRange {
  Resource resource;
  size_t offset = 0;
  size_t length = 0;
};

// One step of a sequence: a program (borrowed; never null), its resources in binding order,
// and an optional grid override (logical threads per dimension).
struct Step {
  const Program* program = nullptr;
  absl::Span<const Resource> resources;
  std::optional<Grid> grid;
};

class ResidentDispatch {
 public:
  virtual ~ResidentDispatch() = default;

  // ---- Required (pure virtual) ----

  // Stable identity of the device behind this dispatcher; resources are owned by it.
  // Valid for the dispatcher's lifetime.
  virtual std::string_view backend_id() const = 0;

  // Allocates a zero-filled buffer of exactly `byte_len` bytes (0 is allowed).
  // ResourceExhausted when device memory or a quota is short, or `byte_len` is absurd.
  virtual absl::StatusOr<Resource> Allocate(size_t byte_len) = 0;

  // Writes `bytes` at offset 0 of `resource`; the rest of the buffer is unchanged.
  // OutOfRange if `bytes` is longer than the buffer; NotFound; FailedPrecondition.
  virtual absl::Status Upload(const Resource& resource, absl::Span<const uint8_t> bytes) = 0;

  // Uploads several buffers as one logical staging operation: one batch, one device
  // synchronization (one network round trip when remote). Every upload is checked before any
  // is written; on error nothing is written. Codes as Upload, plus InvalidArgument when the
  // batch has more uploads than the dispatcher's limits allow and ResourceExhausted when its
  // bytes are more than they allow. Pure virtual by contract: a per-buffer loop would
  // hide one synchronization per buffer.
  virtual absl::Status UploadMany(absl::Span<const BufferUpload> uploads) = 0;

  // Returns the whole buffer. NotFound; FailedPrecondition.
  virtual absl::StatusOr<std::vector<uint8_t>> Download(const Resource& resource) = 0;

  // Replaces `*output` with the whole buffer, reusing its capacity. NotFound;
  // FailedPrecondition. `*output` is unspecified on error.
  virtual absl::Status DownloadInto(const Resource& resource, std::vector<uint8_t>* output) = 0;

  // Returns bytes [byte_offset, byte_offset + byte_len) and moves only those bytes.
  // OutOfRange unless byte_offset <= size and byte_len <= size - byte_offset; NotFound;
  // FailedPrecondition. Pure virtual by contract: a full download would make every
  // convergence poll cost O(buffer).
  virtual absl::StatusOr<std::vector<uint8_t>> DownloadRange(const Resource& resource,
                                                             size_t byte_offset,
                                                             size_t byte_len) = 0;

  // As DownloadRange, into caller-owned storage (capacity reused).
  virtual absl::Status DownloadRangeInto(const Resource& resource, size_t byte_offset,
                                         size_t byte_len, std::vector<uint8_t>* output) = 0;

  // Frees the buffer; the handle is invalid afterwards (a second Free is NotFound). If work
  // still uses the buffer, its memory returns to the device when that work completes.
  // NotFound; FailedPrecondition.
  virtual absl::Status Free(Resource resource) = 0;

  // Runs one program with `resources` in binding order. The whole call is validated first:
  // NotFound (kernel or resource), FailedPrecondition, InvalidArgument (program, bindings,
  // grid). Returns once the work is done.
  virtual absl::Status Dispatch(const Program& program, absl::Span<const Resource> resources,
                                std::optional<Grid> grid_override) = 0;

  // ---- Provided (overridable defaults, as the seed provides them) ----

  // Implementation version, for cache compatibility of resident data. The default is
  // "unversioned"; every Sluice dispatcher overrides it.
  virtual std::string_view backend_version() const;

  // Writes byte ranges into buffers as one logical staging operation. The default accepts
  // only zero offsets (InvalidArgument otherwise, before anything is written) and forwards to
  // UploadMany; every Sluice dispatcher overrides it with true ranged uploads (OutOfRange for
  // a range past the end).
  virtual absl::Status UploadAtMany(absl::Span<const RangedUpload> uploads);

  // Reads several ranges into caller-owned vectors, `outputs[i]` receiving `ranges[i]`, as one
  // logical readback. InvalidArgument if the counts differ, an output is null or one vector is
  // given twice; then codes as DownloadRange. The default loops over DownloadRangeInto.
  virtual absl::Status DownloadRangesInto(absl::Span<const ReadRange> ranges,
                                          absl::Span<std::vector<uint8_t>* const> outputs);

  // Runs `steps` in order, then reads `read_ranges` into `outputs`. Sluice dispatchers
  // validate the whole call first (an invalid step anywhere runs nothing) and enqueue steps and
  // reads behind one synchronization. The default dispatches each step, then reads.
  virtual absl::Status DispatchSequenceReadRangesInto(
      absl::Span<const Step> steps, absl::Span<const ReadRange> read_ranges,
      absl::Span<std::vector<uint8_t>* const> outputs);

  // Runs `prefix_steps` once, `repeated_steps` `repeat_count` times (0 runs none), then reads.
  // A loop guard (kLoopGuardKernel) as the first repeated step ends the repetition before an
  // iteration that starts with its word zero. Sluice dispatchers forward the repeat structure
  // to the device, which loops the group (and reads the guard) with no per-iteration host work.
  // The default loops the repeated group directly, building no host sequence, and reads a
  // guard's word with a ranged read before each iteration.
  virtual absl::Status DispatchRepeatedSequenceReadRangesInto(
      absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
      uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
      absl::Span<std::vector<uint8_t>* const> outputs);

  // ---- Beyond the seed's trait ----

  // Reads into caller-owned memory, as DownloadRangesInto: `outputs[i]` receives `ranges[i]`
  // and must be exactly `ranges[i].length` bytes (the caller's array, a mapped file, a pinned
  // buffer). InvalidArgument if the counts or a size differ, or two outputs overlap; then codes
  // as DownloadRange. Nothing outside the outputs is written; their contents are unspecified on
  // error. Sluice dispatchers read straight into them; the default reads through vectors and
  // copies.
  virtual absl::Status DownloadRangesIntoSpans(absl::Span<const ReadRange> ranges,
                                               absl::Span<const absl::Span<uint8_t>> outputs);

  // DispatchRepeatedSequenceReadRangesInto, reading into caller-owned memory (outputs as in
  // DownloadRangesIntoSpans).
  virtual absl::Status DispatchRepeatedSequenceReadRangesIntoSpans(
      absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
      uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
      absl::Span<const absl::Span<uint8_t>> outputs);

  // One range into `output`, whose size is the range's length: DownloadRangesIntoSpans.
  absl::Status DownloadRangeIntoSpan(const Resource& resource, size_t byte_offset,
                                     absl::Span<uint8_t> output);

  // A sequence, then reads into caller-owned memory:
  // DispatchRepeatedSequenceReadRangesIntoSpans with no repeated group.
  absl::Status DispatchSequenceReadRangesIntoSpans(absl::Span<const Step> steps,
                                                   absl::Span<const ReadRange> read_ranges,
                                                   absl::Span<const absl::Span<uint8_t>> outputs);

  // Cancels the calls in flight at this moment, from any thread (a Ctrl-C handler's, a
  // watchdog's): each returns Cancelled, a call that has not started yet without running, a
  // running sequence at its next step, iteration or (on the CPU device) chunk of a pass; what
  // ran stays, nothing is read. Calls made afterwards run normally. The default cancels
  // nothing: its calls run to their end.
  virtual void Cancel() {}

 protected:
  // ---- For implementations ----

  // The Resource that dispatcher instance `owner` (nonzero, unique to the instance) issues for
  // its buffer `id`.
  static Resource MakeResource(uint64_t owner, uint64_t id) { return Resource(owner, id); }
  // The buffer id inside `resource` if instance `owner` issued it; NotFound for a default
  // Resource, FailedPrecondition (naming `backend_id`) for another instance's.
  static absl::StatusOr<uint64_t> OwnedId(const Resource& resource, uint64_t owner,
                                          std::string_view backend_id);
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_RESIDENT_DISPATCH_H_
