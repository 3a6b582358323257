#include "sluice/ifds/staged_flows.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"
#include "sluice/ifds/compile.h"
#include "sluice/kernels/basic.h"
#include "sluice/kernels/ifds.h"

namespace sluice::ifds {
namespace {

using kernels::ifds::GraphLayout;
// The lists are the sections from the flows' headers on, in order.
constexpr bool ListIsSection(StagedFlowLists::List list, GraphLayout::Section section) {
  return static_cast<uint32_t>(section) ==
         static_cast<uint32_t>(GraphLayout::kFlowHeaders) + static_cast<uint32_t>(list);
}
static_assert(ListIsSection(StagedFlowLists::kKills, GraphLayout::kKills) &&
              ListIsSection(StagedFlowLists::kGens, GraphLayout::kGens) &&
              ListIsSection(StagedFlowLists::kPairs, GraphLayout::kPairs) &&
              StagedFlowLists::kNumLists == 4);

}  // namespace

StagedFlowLists::StagedFlowLists(ResidentDispatch& dispatch, uint64_t chunk_words,
                                 uint64_t batch_words)
    : dispatch_(dispatch),
      buffers_(dispatch),
      chunk_words_(std::clamp<uint64_t>(chunk_words, 1, uint64_t{1} << 30)),
      batch_words_(std::max<uint64_t>(batch_words, 1)) {}

absl::Status StagedFlowLists::Take(FlowTable& flows, size_t first, size_t last) {
  if (copied_) {
    return absl::FailedPreconditionError("the staged flows were copied already");
  }
  if (first != taken_ || last < first || last > flows.size()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "flows [%d, %d) of %d do not follow the %d taken", first, last, flows.size(), taken_));
  }
  const FlowTable::Begins end = flows.begins(last);
  words_ = {GraphLayout::kFlowHeaderWords * uint64_t{last}, end.kills, end.gens, end.pairs};
  taken_ = last;
  uint64_t waiting = 0;
  for (int l = 0; l < kNumLists; ++l) waiting += words_[l] - sent_words_[l];
  if (waiting < batch_words_) return absl::OkStatus();
  const uint64_t from = sent_;
  RETURN_IF_ERROR(Send(flows));
  flows.Release(from, last);
  return absl::OkStatus();
}

absl::Status StagedFlowLists::Flush(FlowTable& flows) {
  if (flushed()) return absl::OkStatus();
  const FlowTable::Begins end = flows.begins(std::min<size_t>(taken_, flows.size()));
  if (flows.size() < taken_ || end.kills != words_[kKills] || end.gens != words_[kGens] ||
      end.pairs != words_[kPairs]) {
    return absl::FailedPreconditionError("the flows flushed are not the flows taken");
  }
  const uint64_t from = sent_;
  RETURN_IF_ERROR(Send(flows));
  flows.Release(from, taken_);
  return absl::OkStatus();
}

absl::Status StagedFlowLists::Send(const FlowTable& flows) {
  // The flows' headers as a compile writes them, and what each yields.
  headers_.clear();
  ReserveHugeRoom(outputs_, taken_);
  FlowTable::Begins b = flows.begins(sent_);
  for (uint64_t f = sent_; f < taken_; ++f) {
    const FlowTable::Begins next = flows.begins(f + 1);
    const bool identity = flows[f].identity;
    for (const uint32_t word : FlowHeader(b, identity)) headers_.push_back(word);
    const uint64_t yields = (next.gens - b.gens) + (next.pairs - b.pairs);
    outputs_.push_back(static_cast<uint32_t>(std::min<uint64_t>(yields, 0x7fffffff)) |
                       (identity ? uint32_t{1} << 31 : 0));
    b = next;
  }
  const std::array<absl::Span<const uint32_t>, kNumLists> lists = {
      absl::MakeConstSpan(headers_), flows.kill_entries(), flows.gen_entries(),
      flows.pair_entries()};
  // The headers being sent begin at the first flow not yet sent.
  const std::array<uint64_t, kNumLists> origin = {sent_words_[kHeaders], 0, 0, 0};
  // In requests of about a batch each: a whole problem's flows told at once (a binary file)
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
    for (uint64_t w = sent_words_[l]; w < words_[l];) {
      if (chunks.empty() || w == chunks.back().first + chunks.back().words) {
        const uint64_t words = std::min(
            chunk_words_, chunks.empty() ? words_[l] - w : 2 * chunks.back().words);
        ASSIGN_OR_RETURN(Resource buffer, buffers_.Allocate(words * 4));
        chunks.push_back(Chunk{buffer, w, words});
      }
      const Chunk& chunk = chunks.back();
      const uint64_t at = w - chunk.first;
      const uint64_t n = std::min({chunk.words - at, words_[l] - w, batch_words_});
      const absl::Span<const uint32_t> words = lists[l].subspan(w - origin[l], n);
      uploads.push_back(RangedUpload{
          chunk.buffer, at * 4,
          absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(words.data()), n * 4)});
      request_words += n;
      w += n;
      if (request_words >= batch_words_) RETURN_IF_ERROR(send());
    }
  }
  RETURN_IF_ERROR(send());
  sent_words_ = words_;
  sent_ = taken_;
  return absl::OkStatus();
}

absl::Status StagedFlowLists::CopyInto(const Resource& graph,
                                       const std::array<uint64_t, kNumLists>& starts) {
  if (!flushed() || copied_) {
    return absl::FailedPreconditionError("the staged flows are not all on the device");
  }
  copied_ = true;
  // A copy a chunk, the bindings each its chunk and the graph.
  std::vector<Program> programs;
  std::vector<std::array<Resource, 2>> bindings;
  for (int l = 0; l < kNumLists; ++l) {
    for (const Chunk& chunk : chunks_[l]) {
      const uint64_t count = std::min(chunk.words, words_[l] - chunk.first);
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
  PageVector<uint32_t>().swap(outputs_);  // its memory too
  for (std::vector<Chunk>& chunks : chunks_) {
    for (const Chunk& chunk : chunks) RETURN_IF_ERROR(buffers_.Free(chunk.buffer));
    chunks.clear();
  }
  return absl::OkStatus();
}

}  // namespace sluice::ifds
