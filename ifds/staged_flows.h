// A problem's flows sent to the device as the problem is read, so that a client of a daemon
// never holds them whole. They are most of a problem read from a front end's text (explicit
// pairs), and as much again in its compiled form: read whole and then compiled, a client held
// both at once beside the parser's index of node names.
//
// LoadOptions::flows_read tells Take of the flows as the parser is done with them; Take sends
// them a batch at a time, in the compiled problem's form (each flow's header and its kills,
// gens and pairs, GraphLayout), into chunks of device buffers, and gives them back
// (FlowTable::Release): the problem keeps their count alone. SolveResident
// (ResidentOptions::staged) compiles the rest of the problem on the host and copies the flows
// from the chunks into the compiled problem on the device (copy_range_u32), in the places a
// host compile would have written them in: the device ends up with the same image, word for
// word.
#ifndef SLUICE_IFDS_STAGED_FLOWS_H_
#define SLUICE_IFDS_STAGED_FLOWS_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sluice/base/mapped_buffer.h"
#include "sluice/client/resident_buffers.h"
#include "sluice/client/resident_dispatch.h"
#include "sluice/ifds/problem.h"

namespace sluice::ifds {

class StagedFlowLists {
 public:
  // A chunk is a device buffer of at most this many words (4 MiB): a list's first is as large
  // as what it first holds, and each next twice the last, so that a small problem's lists take
  // little more than their size. Flows are sent once this many words of them wait (1 MiB),
  // and by Flush: a batch is a round trip, and gives its flows' memory back (a flush of every
  // core's TLB), while the parser waits and reads ahead, and a daemon on the same host takes
  // it through shared memory, that much of which stays in this process. 4 MiB batches read a
  // 1M-path-edge problem's text (docs/benchmarks.md) at a peak 11 MB higher (68 MB against
  // 57) and the 5M one's 2-3 MB higher, for up to 0.05 s of its 0.5.
  static constexpr uint64_t kDefaultChunkWords = uint64_t{1} << 20;
  static constexpr uint64_t kDefaultBatchWords = uint64_t{1} << 18;
  // The lists, as the compiled problem's sections kFlowHeaders to kPairs, in that order.
  enum List { kHeaders, kKills, kGens, kPairs, kNumLists };

  // `dispatch` must outlive this; the chunks are freed by CopyInto, or at destruction. Tests
  // give small sizes (at least 1) to cross chunks and batches often.
  explicit StagedFlowLists(ResidentDispatch& dispatch,
                           uint64_t chunk_words = kDefaultChunkWords,
                           uint64_t batch_words = kDefaultBatchWords);
  StagedFlowLists(const StagedFlowLists&) = delete;
  StagedFlowLists& operator=(const StagedFlowLists&) = delete;

  // Takes flows [first, last) of `flows`, a problem's table being read, whose first flows were
  // taken before: `first` is where the last range ended (0 at first); FailedPrecondition
  // otherwise, and after CopyInto. Flows wait until a batch's worth of words has been taken,
  // then go to the device and back to the system (Release). The errors of the dispatcher (its
  // memory, a lost session): the taken flows are then in no defined place.
  absl::Status Take(FlowTable& flows, size_t first, size_t last);
  // Sends the flows still waiting, read from `flows` (the table Take was given, which may have
  // moved since: the problem read), and gives them back. Then every flow taken is on the
  // device, and `flows` holds their count alone.
  absl::Status Flush(FlowTable& flows);

  // Flows taken, and the words of each list they make.
  uint64_t flows() const { return taken_; }
  uint64_t words(List list) const { return words_[list]; }
  // Whether every flow taken is on the device (Flush), and the bytes sent so far.
  bool flushed() const { return sent_ == taken_; }
  uint64_t sent_bytes() const {
    return 4 * (sent_words_[kHeaders] + sent_words_[kKills] + sent_words_[kGens] +
                sent_words_[kPairs]);
  }
  // Per flow sent, the facts it yields besides the identity's (its gens and pairs, at most
  // 2^31 - 1), with its identity flag in the top bit: what sizing a solve's tables reads of it
  // (CompiledProblem::reach). Empty once copied.
  absl::Span<const uint32_t> outputs() const { return outputs_; }

  // Copies every list into `graph` at `starts` (its sections', in words), then frees the
  // chunks and the outputs; the flows must be flushed. Errors of the dispatcher.
  absl::Status CopyInto(const Resource& graph, const std::array<uint64_t, kNumLists>& starts);

 private:
  // Sends flows [sent_, taken_) of `flows` (which the caller may then release).
  absl::Status Send(const FlowTable& flows);

  ResidentDispatch& dispatch_;
  ResidentBuffers buffers_;
  const uint64_t chunk_words_;
  const uint64_t batch_words_;
  struct Chunk {
    Resource buffer;
    uint64_t first = 0;  // the list's word at its word 0
    uint64_t words = 0;
  };
  std::array<std::vector<Chunk>, kNumLists> chunks_;
  std::array<uint64_t, kNumLists> words_{};  // taken
  std::array<uint64_t, kNumLists> sent_words_{};
  uint64_t taken_ = 0;
  uint64_t sent_ = 0;
  bool copied_ = false;
  std::vector<uint32_t> headers_;  // the headers being sent
  PageVector<uint32_t> outputs_;
};

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_STAGED_FLOWS_H_
