// How reads reach the client: the bytes of a list of ranges land in chunked data replies, the
// device copying straight into the replies' data. A read of more than a window streams: the
// daemon holds two windows of it, not all of it, and sends while it copies. Used by Read and by
// Execute's reads behind its steps.
#ifndef SLUICE_SERVER_OPS_READ_H_
#define SLUICE_SERVER_OPS_READ_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sluice/engine/session.h"
#include "sluice/server/ops/session_state.h"

namespace sluice {

// A read of more than a window (ReadWindowBytes of the session's chunk) streams: its job checks
// all of it and makes its first window of replies, and while the session's `streamed` read is
// set the transport asks for each next window once it has sent most of the last one. Requests
// run in order, so nothing else runs on the session meanwhile and every window reads what the
// first would have. An error after the first window ends the read with a final reply saying
// so (its earlier data replies are sent already). An execute's reads stream so too, their
// first window read behind its steps.

// Reads `reads`, through the sink `run` is given (after the steps `run` runs, when executing),
// into chunked data replies of request `id`, the last one final; or one final reply with the
// error. A read of more than kCheapBytes reserves what its replies hold (ReplyBytes, up to its
// bytes and the largest chunk, the rest counted once they are made; ReadHoldBytes where it
// streams), in state.read_hold, and lands its bytes in one block (state.read_block). A read of
// more than a window streams where `may_stream`, all of it checked by `check` (the checks `run`
// makes before it reads, in its order: its steps' first) before `run` reads the first window.
using ReadCheck = absl::FunctionRef<absl::Status(absl::Span<const RangeRef>)>;
using ReadRun = absl::FunctionRef<absl::Status(absl::Span<const RangeRef>, ReadSink)>;
void ReadInto(SessionState& state, uint64_t id, std::vector<RangeRef> reads, bool may_stream,
              ReadCheck check, ReadRun run, Responses* out);

class StreamedRead {
 public:
  // Starts a read of `total` bytes that streams, as the session's `streamed` read, making its
  // first window of replies through `run`; or replies why it cannot (`check`'s error first).
  static void Start(SessionState& state, uint64_t id, std::vector<RangeRef> reads,
                    uint64_t total, ReadCheck check, ReadRun run, Responses* out);
  // Makes the next window of replies of the session's streamed read; once its last reply is
  // made, the read ends (state.streamed is reset and its reservation is in state.read_hold).
  static void Continue(SessionState& state, Responses* out);

 private:
  // Makes the next window of replies through `run`; the read ends after its last window or an
  // error (whose reply it makes). The window's status.
  static absl::Status Window(SessionState& state, ReadRun run, Responses* out);
  // The pieces of the reads that hold the next `length` bytes; advances past them.
  std::vector<RangeRef> Take(uint64_t length);

  uint64_t id_ = 0;
  std::vector<RangeRef> reads_;
  uint64_t total_ = 0;
  uint64_t window_ = 0;
  uint64_t next_ = 0;     // the first byte of the concatenation not read yet
  size_t read_ = 0;       // the read it lies in...
  uint64_t within_ = 0;   // ...and where in that read
  TransferBudget::Hold hold_;  // what two windows' replies hold
};

}  // namespace sluice

#endif  // SLUICE_SERVER_OPS_READ_H_
