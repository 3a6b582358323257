// The wire contract's C++ side, free of gRPC and protobuf: what a session operation names (byte
// ranges of buffers, kernel steps), the limits a session is granted, what a device reports, and
// the bounds the protocol fixes. The engine takes these types; proto/codec.h maps them to and
// from the messages of sluice/v1/sluice.proto, for the daemon and the remote client alike.
#ifndef SLUICE_PROTO_CONTRACT_H_
#define SLUICE_PROTO_CONTRACT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sluice/kernels/grid.h"

namespace sluice {

// ---- Bounds every daemon and client agree on -----------------------------------------------

// Data moves in chunks of a size negotiated at open, within these bounds.
inline constexpr uint32_t kMinChunkSize = 4 << 10;
inline constexpr uint32_t kMaxChunkSize = 64 << 20;
// A message may hold one full chunk and this much besides (an upload's ranges, a sequence's
// steps); a daemon accepts messages of its largest chunk plus this.
inline constexpr uint64_t kMessageOverheadBytes = 6 << 20;
// The most bytes a ping may carry.
inline constexpr size_t kMaxPingPayload = 64 << 10;
// Before its session is open, a stream costs the daemon little: it reads the stream's messages
// one at a time, each of at most kMaxUnopenedMessageBytes, at most kMaxUnopenedMessages of
// them (past either, the stream ends, RESOURCE_EXHAUSTED), and a ping carries at most
// kMaxUnopenedPingPayload bytes (INVALID_ARGUMENT beyond).
inline constexpr size_t kMaxUnopenedMessageBytes = 64 << 10;
inline constexpr uint32_t kMaxUnopenedMessages = 16;
inline constexpr size_t kMaxUnopenedPingPayload = 1 << 10;
// The bytes of OpenRequest.client_name a daemon keeps (for its log).
inline constexpr size_t kMaxClientNameBytes = 128;
// The length of a shared-memory offer's token (OpenResponse.shared_memory), which the client
// sends, as these bytes exactly, with the region's file descriptor.
inline constexpr size_t kSharedMemoryTokenBytes = 64;

// ---- Operations ----------------------------------------------------------------------------

// A byte range of a buffer: [offset, offset + length). Valid when offset <= size and
// length <= size - offset (CheckRange).
struct RangeRef {
  uint64_t handle = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Checks that [offset, offset + length) lies inside a buffer of `size` bytes without ever
// computing offset + length; OutOfRange otherwise (callers say which range it was).
absl::Status CheckRange(uint64_t size, uint64_t offset, uint64_t length);

// One kernel step: a catalog kernel, its parameters, buffer handles in binding order, an
// optional grid override, and the kernel version the caller was written for (0: whichever the
// catalog has). Borrowed for the duration of a call.
struct StepRef {
  std::string_view kernel;
  absl::Span<const uint64_t> params;
  absl::Span<const uint64_t> handles;
  std::optional<Grid> grid;
  uint32_t version = 0;
};

// ---- Limits --------------------------------------------------------------------------------

// The limits of one session: those a daemon grants at open (with the negotiated chunk size),
// and a daemon's defaults (with its default chunk size).
struct SessionLimits {
  uint32_t chunk_size = 1 << 20;                   // bytes per data message, both directions
  uint64_t memory_quota = uint64_t{64} << 30;      // bytes of buffers held at once
  uint64_t max_buffers = 1 << 16;                  // buffers held at once
  uint64_t max_steps = 4096;                       // steps per sequence (prefix + repeated)
  uint64_t max_ranges = 1 << 16;                   // ranges per upload, read or sequence
  uint64_t max_request_bytes = uint64_t{4} << 30;  // upload data or read bytes per request
  // The largest message the daemon accepts: its largest chunk plus kMessageOverheadBytes.
  uint64_t max_message_bytes = (2 << 20) + kMessageOverheadBytes;
  // Seconds one request may run (it stops, DeadlineExceeded, at its next step, iteration or
  // chunk past them); 0: no limit.
  uint64_t max_request_seconds = 3600;
};

// ---- What a device reports -----------------------------------------------------------------

struct MemoryInfo {
  uint64_t total = 0;  // bytes the device will hand out
  uint64_t used = 0;   // bytes currently allocated: buffers and scratch
  uint64_t peak = 0;   // most bytes ever allocated at once
  // Of `used`, device memory the device holds for its own work rather than for a buffer
  // (the CUDA device: CUB temporary storage and loop words, per stream).
  uint64_t scratch = 0;
  // Page-locked host memory the device holds for transfers (the CUDA device: each stream's
  // staging ring and read arena). Host memory: not part of `used` or `total`.
  uint64_t host_pinned = 0;

  // Device memory held by buffers. (The two figures are read one after the other: a reader
  // racing an allocation of scratch may see it in `scratch` before `used`.)
  uint64_t buffers() const { return used > scratch ? used - scratch : 0; }
};

// Cumulative counts since the device was created.
struct DeviceCounters {
  uint64_t bytes_uploaded = 0;    // host -> device copies
  uint64_t bytes_downloaded = 0;  // device -> host copies
  uint64_t synchronizations = 0;  // host waits on a stream
  uint64_t launches = 0;          // kernel passes run (CUDA graph loops: enqueued, so passes a
                                  // loop guard skipped in the last batches count too)
  uint64_t allocations = 0;
  uint64_t frees = 0;
  uint64_t failures = 0;  // times the device failed (its context broke; the CPU device never)
  uint64_t resets = 0;    // resets that brought it back after a failure
};

struct DeviceInfo {
  std::string kind;     // "cpu" or "cuda"
  std::string name;     // human-readable model
  std::string id;       // stable identity of this device instance (the backend id)
  std::string version;  // implementation version, including the kernel catalog fingerprint
  uint32_t compute_units = 0;  // worker threads or streaming multiprocessors
};

}  // namespace sluice

#endif  // SLUICE_PROTO_CONTRACT_H_
