// Upload assembly: an upload's messages, as they arrive, become one job that writes its data,
// or one refusal. A refusal comes at the first message when it needs no earlier request to have
// run (not open, too many ranges, too many bytes, a handle the session does not hold or a
// range outside its buffer), or at the chunk that breaks a rule; a message of another request
// interrupts an upload (INVALID_ARGUMENT). The refused upload's reply is queued at once and its
// later messages (same id, no ranges) are discarded up to its `last`: a client may stop
// sending on the reply. The data is copied as it arrives into blocks (up to kUploadBlockBytes
// each): whole huge pages while a huge page's worth or more is to come, then a mapping of small
// pages for the rest, or the heap's memory below kMappedBlockBytes. Blocks of
// kUploadBlockBytes are the daemon's, kept warm from one upload to the next
// (SessionManager::upload_blocks); a fresh mapping's pages are backed a range at a time as
// they are filled, in one call to the system. The parsed message's copy goes at once, so that
// the next message is parsed into memory the heap just had back. Fresh memory costs a fault
// and a zeroed page, which a virtual machine makes dear and, at random, several times dearer
// (docs/benchmarks.md). Its memory is reserved from the transfer budget as the data reaches
// each page (a warm block's at its first byte, its pages being backed), so a client that
// declares a large upload and stalls holds only what it sent, rounded up to a huge page, or
// to a block where the block was warm. A block kept warm holds an earlier upload's bytes:
// only the bytes an upload wrote into it are ever read.
#ifndef SLUICE_SERVER_OPS_UPLOAD_H_
#define SLUICE_SERVER_OPS_UPLOAD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sluice/base/mapped_buffer.h"
#include "sluice/base/warm_buffers.h"
#include "sluice/server/ops/session_state.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

// An upload's blocks hold at most kUploadBlockBytes (engine/session_manager.h; its last block,
// and a small upload's only one, hold what is left); a block of kMappedBlockBytes or more is a
// mapping of its own, a smaller one the heap's.
inline constexpr uint64_t kMappedBlockBytes = uint64_t{1} << 20;

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
    // The data received, in order: every block full but the last.
    struct Block {
      WarmBuffers::Lease lease;  // a block of kUploadBlockBytes: the daemon's, kept warm
      MappedBuffer mapped;       // another large block's bytes
      // Its pages' size, as they are counted: huge pages where it holds whole ones; the whole
      // block where it was kept warm (its pages are all backed already).
      uint64_t page = 0;
      std::string heap;  // a small one's
      uint64_t size = 0;
      uint64_t capacity = 0;
      uint8_t* bytes() {
        if (capacity < kMappedBlockBytes) return reinterpret_cast<uint8_t*>(heap.data());
        return lease.size() > 0 ? lease.data() : mapped.data();
      }
      const uint8_t* data() const { return const_cast<Block*>(this)->bytes(); }
    };
    std::vector<Block> blocks;
    // The memory it holds: its ranges, and its blocks with their places in `blocks`
    // (counted by Append).
    uint64_t held = 0;
    // Whether what it holds is reserved as it comes (a large upload, or one of many ranges),
    // rather than counted once it is whole.
    bool reserved = false;
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
  // Appends the chunk's `data` to `up`'s blocks, a block made and its pages reserved and
  // backed as they are needed; RESOURCE_EXHAUSTED where the budget or the system has no room
  // (the upload is then refused whole).
  absl::Status Append(std::string_view data, Pending& up);
  // Writes the upload's data to the session's buffers (its job).
  static void Write(SessionState& state, const Pending& upload, Responses* out);

  SessionState* const state_;
  std::optional<Pending> upload_;
  // The id of an upload that ended early, whose later messages are discarded up to its last.
  std::optional<uint64_t> discarding_;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_OPS_UPLOAD_H_
