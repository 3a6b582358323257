// The daemon's session operations, each declared once: the oneof case of SessionRequest it
// serves, its name (the metrics' `kind` label, the log's word), its cost class, what a
// CancelRequest and a resumed stream do to it, and its handler. SessionProtocol dispatches
// through this table; metrics derive their series from it; a test checks that every case of
// SessionRequest's `op` oneof has exactly one entry.
//
// Adding an operation: its messages in proto/sluice/v1/sluice.proto, a handler in a file of its
// own under server/ops/ declared in server/ops/handlers.h, a row in op_table.cc, and its call
// in the client (client/resident_dispatch.h, local and remote).
#ifndef SLUICE_SERVER_OPS_OP_TABLE_H_
#define SLUICE_SERVER_OPS_OP_TABLE_H_

#include <cstddef>
#include <string_view>

#include "absl/types/span.h"
#include "sluice/server/ops/handlers.h"
#include "sluice/server/ops/session_state.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

// Where a request runs.
enum class OpCost {
  kInline,    // a few bytes, no device wait: may run on the transport's thread when the
              // session has nothing queued
  kQueued,    // may wait for the device: always on the executor, in order
  kTransfer,  // moves data: inline when it moves at most kCheapBytes, else queued, and its
              // bytes reserved from the transfer budget
};

// What a CancelRequest naming it does.
enum class OpCancel {
  kNever,          // nothing: it is answered when it arrives
  kBeforeItRuns,   // queued, it is answered CANCELLED without running
  kWhileRunning,   // that, and running, it stops at its next step, iteration or chunk
};

// What a resumed stream does with it when the client sends it again.
enum class OpResume {
  kRunsAgain,     // an open: it is how a stream resumes, so it always runs
  kReread,        // it only reads: run again (nothing of its replies is kept)
  kReplayed,      // its recorded replies are sent again; it never runs twice
};

struct OpSpec {
  v1::SessionRequest::OpCase op;
  std::string_view name;
  OpCost cost;
  OpCancel cancel;
  OpResume resume;
  // Its requests span several messages, assembled before its job exists (uploads: see
  // server/ops/upload.h); `accept` is then null.
  bool chunked = false;
  // Makes the job of a complete request, in arrival order (the read path): sets `job.run`,
  // moving what it needs out of `request`. `job` comes with its id, op, arrival time, cancel
  // flag, cost and resume policy set from this row; `accept` may refine `job.cheap` (a
  // transfer's size) or answer at once (a job whose run only replies).
  void (*accept)(SessionState& state, v1::SessionRequest& request, Job& job) = nullptr;
};

// Every operation, in the order of their oneof field numbers.
inline constexpr OpSpec kOpTable[] = {
    {v1::SessionRequest::kOpen, "open", OpCost::kQueued, OpCancel::kBeforeItRuns,
     OpResume::kRunsAgain, false, AcceptOpen},
    // Not inline: a device's allocation may wait for the device.
    {v1::SessionRequest::kAllocate, "allocate", OpCost::kQueued, OpCancel::kBeforeItRuns,
     OpResume::kReplayed, false, AcceptAllocate},
    {v1::SessionRequest::kUpload, "upload", OpCost::kTransfer, OpCancel::kBeforeItRuns,
     OpResume::kReplayed, /*chunked=*/true, nullptr},
    {v1::SessionRequest::kRead, "read", OpCost::kTransfer, OpCancel::kBeforeItRuns,
     OpResume::kReread, false, AcceptRead},
    // Not inline: a device's free may wait for the device (cudaFree does).
    {v1::SessionRequest::kFree, "free", OpCost::kQueued, OpCancel::kBeforeItRuns,
     OpResume::kReplayed, false, AcceptFree},
    {v1::SessionRequest::kExecute, "execute", OpCost::kQueued, OpCancel::kWhileRunning,
     OpResume::kReplayed, false, AcceptExecute},
    {v1::SessionRequest::kPing, "ping", OpCost::kInline, OpCancel::kBeforeItRuns,
     OpResume::kReread, false, AcceptPing},
    // Acts when it arrives, and holds nothing: its job only replies whether it found its
    // target.
    {v1::SessionRequest::kCancel, "cancel", OpCost::kInline, OpCancel::kNever,
     OpResume::kReplayed, false, AcceptCancel},
};
inline constexpr size_t kOpCount = sizeof(kOpTable) / sizeof(kOpTable[0]);

constexpr absl::Span<const OpSpec> Ops() { return kOpTable; }

// Where `op`'s row is in kOpTable; kOpCount for OP_NOT_SET (a request that carries no
// operation).
constexpr size_t OpIndex(v1::SessionRequest::OpCase op) {
  for (size_t i = 0; i < kOpCount; ++i) {
    if (kOpTable[i].op == op) return i;
  }
  return kOpCount;
}

// The row of `op`; null for OP_NOT_SET.
constexpr const OpSpec* FindOp(v1::SessionRequest::OpCase op) {
  const size_t i = OpIndex(op);
  return i < kOpCount ? &kOpTable[i] : nullptr;
}

namespace op_table_internal {
constexpr bool Ascending() {
  for (size_t i = 1; i < kOpCount; ++i) {
    if (kOpTable[i - 1].op >= kOpTable[i].op) return false;
  }
  return true;
}
}  // namespace op_table_internal
static_assert(op_table_internal::Ascending(),
              "kOpTable: one row per operation, in the order of their field numbers");
// The job of a complete request whose row is `spec`, with everything the row decides set.
Job NewJob(SessionState& state, const OpSpec& spec, uint64_t id);

}  // namespace sluice

#endif  // SLUICE_SERVER_OPS_OP_TABLE_H_
