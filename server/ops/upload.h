// Upload assembly: an upload's messages, as they arrive, become one job that writes its data,
// or one refusal. A refusal comes at the first message when it needs no earlier request to have
// run (not open, too many ranges, too many bytes, a handle the session does not hold or a
// range outside its buffer), or at the chunk that breaks a rule; a message of another request
// interrupts an upload (INVALID_ARGUMENT). The refused upload's reply is queued at once and its
// later messages (same id, no ranges) are discarded up to its `last`: a client may stop
// sending on the reply. The data stays in the chunks it arrived in (moved out of the parsed
// messages, never copied) until the device copy gathers it; its memory is reserved from the
// transfer budget as it arrives, so a client that declares a large upload and stalls holds
// only what it sent.
#ifndef SLUICE_SERVER_OPS_UPLOAD_H_
#define SLUICE_SERVER_OPS_UPLOAD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sluice/server/ops/session_state.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

class UploadAssembly {
 public:
  // `state` must outlive the assembly.
  explicit UploadAssembly(SessionState* state) : state_(state) {}

  // Takes the next message of the stream, in arrival order. Returns true when it was an
  // upload's (appending to `jobs` the upload's job or refusal once it ends), false when it is
  // another request's, for the caller to handle (after the reply of an upload it interrupted).
  // With `refused` not OK the message was refused unparsed (`request` holds its id and
  // operation only, and an upload's `last`): the upload it begins or goes on with ends with
  // that refusal.
  bool Take(v1::SessionRequest& request, std::vector<Job>* jobs,
            absl::Status refused = absl::OkStatus());
  // The stream's input ended: an unfinished upload gets its reply.
  void EndOfInput(std::vector<Job>* jobs);
  // Whether an upload awaits its next message.
  bool pending() const { return upload_.has_value(); }

 private:
  struct Pending {
    uint64_t id = 0;
    std::vector<RangeRef> ranges;
    uint64_t expected = 0;
    uint64_t received = 0;
    std::vector<std::string> chunks;
    // The memory it holds: its ranges, and its chunks with their places in `chunks`
    // (HeldBytes), more than the bytes received where it comes in many small chunks.
    uint64_t held = 0;
    TransferBudget::Hold hold;  // the daemon's memory for what it holds
    std::optional<v1::SharedSpan> shared;  // the data is there instead (shared memory)
  };

  void Accept(v1::SessionRequest& request, std::vector<Job>* jobs);
  // Why the first message of an upload is refused at once, or OK; fills in `up`'s ranges and
  // reserves transfer memory for its data.
  absl::Status CheckFirstMessage(const v1::UploadRequest& first, Pending& up);
  // Ends the pending upload: its job runs the write, or replies `error`. The later messages of
  // an upload that ended early (`more_may_follow`) are discarded up to its last.
  void End(absl::Status error, std::vector<Job>* jobs, bool more_may_follow);
  // Writes the upload's data to the session's buffers (its job).
  static void Write(SessionState& state, const Pending& upload, Responses* out);

  SessionState* const state_;
  std::optional<Pending> upload_;
  // The id of an upload that ended early, whose later messages are discarded up to its last.
  std::optional<uint64_t> discarding_;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_OPS_UPLOAD_H_
