#include "sluice/ifds/staged_flows.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"
#include "sluice/kernels/basic.h"

namespace sluice::ifds {

StagedFlowLists::StagedFlowLists(ResidentDispatch& dispatch, uint64_t chunk_words,
                                 uint64_t batch_words)
    : dispatch_(dispatch),
      buffers_(dispatch),
      chunk_words_(std::clamp<uint64_t>(chunk_words, 1, uint64_t{1} << 30)),
      batch_words_(std::max<uint64_t>(batch_words, 1)) {}

absl::Status StagedFlowLists::Take(FlowTable& flows, size_t first, size_t last) {
  if (copied_) {
    return absl::FailedPreconditionError("the staged lists were copied already");
  }
  if (first != taken_ || last < first || last > flows.size()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "flows [%d, %d) of %d do not follow the %d taken", first, last, flows.size(), taken_));
  }
  const FlowTable::Begins end = flows.begins(last);
  entries_ = {end.kills, end.gens, end.pairs};
  taken_ = last;
  uint64_t waiting = 0;
  for (int l = 0; l < kNumLists; ++l) waiting += entries_[l] - sent_entries_[l];
  if (waiting < batch_words_) return absl::OkStatus();
  const uint64_t from = sent_;
  RETURN_IF_ERROR(Send(flows));
  flows.ReleaseLists(from, last);
  return absl::OkStatus();
}

absl::Status StagedFlowLists::Flush(const FlowTable& flows) {
  if (flushed()) return absl::OkStatus();
  if (flows.size() < taken_ || flows.begins(taken_).pairs != entries_[kPairs] ||
      flows.begins(taken_).kills != entries_[kKills] ||
      flows.begins(taken_).gens != entries_[kGens]) {
    return absl::FailedPreconditionError("the flows flushed are not the flows taken");
  }
  return Send(flows);
}

absl::Status StagedFlowLists::Send(const FlowTable& flows) {
  const std::array<absl::Span<const uint32_t>, kNumLists> lists = {
      flows.kill_entries(), flows.gen_entries(), flows.pair_entries()};
  // In requests of about a batch each: a whole problem's lists told at once (a binary file)
  // are not one message.
  std::vector<RangedUpload> uploads;
  uint64_t request_words = 0;
  const auto send = [&]() -> absl::Status {
    if (uploads.empty()) return absl::OkStatus();
    RETURN_IF_ERROR(dispatch_.UploadAtMany(uploads));
    uploads.clear();
    request_words = 0;
    return absl::OkStatus();
  };
  for (int l = 0; l < kNumLists; ++l) {
    std::vector<Chunk>& chunks = chunks_[l];
    for (uint64_t w = sent_entries_[l]; w < entries_[l];) {
      if (chunks.empty() || w == chunks.back().first + chunks.back().words) {
        const uint64_t words = std::min(
            chunk_words_, chunks.empty() ? entries_[l] - w : 2 * chunks.back().words);
        ASSIGN_OR_RETURN(Resource buffer, buffers_.Allocate(words * 4));
        chunks.push_back(Chunk{buffer, w, words});
      }
      const Chunk& chunk = chunks.back();
      const uint64_t at = w - chunk.first;
      const uint64_t n = std::min({chunk.words - at, entries_[l] - w, batch_words_});
      const absl::Span<const uint32_t> words = lists[l].subspan(w, n);
      uploads.push_back(RangedUpload{
          chunk.buffer, at * 4,
          absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(words.data()), n * 4)});
      request_words += n;
      w += n;
      if (request_words >= batch_words_) RETURN_IF_ERROR(send());
    }
  }
  RETURN_IF_ERROR(send());
  sent_entries_ = entries_;
  sent_ = taken_;
  return absl::OkStatus();
}

absl::Status StagedFlowLists::CopyInto(const Resource& graph,
                                       const std::array<uint64_t, kNumLists>& starts) {
  if (!flushed() || copied_) {
    return absl::FailedPreconditionError("the staged lists are not all on the device");
  }
  copied_ = true;
  // A copy a chunk, the bindings each its chunk and the graph.
  std::vector<Program> programs;
  std::vector<std::array<Resource, 2>> bindings;
  for (int l = 0; l < kNumLists; ++l) {
    for (const Chunk& chunk : chunks_[l]) {
      const uint64_t count = std::min(chunk.words, entries_[l] - chunk.first);
      programs.push_back(
          Program::Of(kernels::kCopyRangeU32Kernel, {0, starts[l] + chunk.first, count}));
      bindings.push_back({chunk.buffer, graph});
    }
  }
  if (!programs.empty()) {
    std::vector<Step> steps;
    for (size_t k = 0; k < programs.size(); ++k) {
      steps.push_back(Step{&programs[k], bindings[k], std::nullopt});
    }
    RETURN_IF_ERROR(dispatch_.DispatchSequenceReadRangesInto(steps, {}, {}));
  }
  for (std::vector<Chunk>& chunks : chunks_) {
    for (const Chunk& chunk : chunks) RETURN_IF_ERROR(buffers_.Free(chunk.buffer));
    chunks.clear();
  }
  return absl::OkStatus();
}

}  // namespace sluice::ifds
