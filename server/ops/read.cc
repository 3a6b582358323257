// Read: the bytes of ranges of the session's buffers, in chunked data replies, in a span of
// the client's shared memory, or streamed a window at a time when large.
#include "sluice/server/ops/read.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "sluice/proto/codec.h"
#include "sluice/server/ops/handlers.h"

namespace sluice {
namespace {

// Lands the bytes `reads` name, in order, which are those from `base` (a multiple of the chunk
// size) of a read of `total` bytes, in data replies appended to `out`: made at the sink's first
// call, once `prepare` says yes (false: the sink fails, so `run` reads nothing). Their bytes go
// into `block` where it is given (each reply's data left empty: the transport sends its piece
// of the block), else into each reply's own data. `run` reads through the sink it is given.
absl::Status LandReads(const SessionState& state, uint64_t id, absl::Span<const RangeRef> reads,
                       uint64_t base, uint64_t total, ReplyBlock* block,
                       absl::FunctionRef<bool()> prepare,
                       absl::FunctionRef<absl::Status(ReadSink)> run, Responses* out) {
  const uint64_t chunk = state.chunk_size.load();
  std::vector<uint64_t> starts;  // where each read begins, from `base`
  starts.reserve(reads.size());
  uint64_t length = 0;
  for (const RangeRef& r : reads) {
    starts.push_back(length);
    length += r.length;
  }
  // The replies are made at the sink's first call, and the device copies straight into their
  // bytes: no staging copy.
  bool made = false;
  std::vector<std::string*> data;  // each reply's own, without a block
  return run([&](size_t i, uint64_t offset, uint64_t piece) {
    if (piece == 0) return absl::Span<uint8_t>();
    if (!made) {
      if (!prepare()) return absl::Span<uint8_t>();  // the session stops, running nothing
      made = true;
      const uint64_t count = (length + chunk - 1) / chunk;
      out->reserve(out->size() + count);
      if (block != nullptr) *block = ReplyBlock(base, length, chunk);
      for (uint64_t c = 0; c < count; ++c) {
        v1::SessionResponse& response = out->emplace_back();
        response.set_id(id);
        v1::DataChunk& chunk_data = *response.mutable_data();
        chunk_data.set_offset(base + c * chunk);
        chunk_data.set_total(total);
        if (block != nullptr) continue;
        chunk_data.mutable_data()->resize(std::min(chunk, length - c * chunk));
        data.push_back(chunk_data.mutable_data());
      }
    }
    const uint64_t at = starts[i] + offset;
    if (block != nullptr) return block->bytes().subspan(at, piece);
    std::string& bytes = *data[at / chunk];
    const uint64_t within = at % chunk;
    return absl::Span<uint8_t>(reinterpret_cast<uint8_t*>(bytes.data()) + within,
                               std::min<uint64_t>(piece, bytes.size() - within));
  });
}

// A read into the client's shared memory: one final reply, no data in it.
void ReadShared(SessionState& state, uint64_t id, const v1::SharedSpan& span,
                absl::Span<const RangeRef> reads, uint64_t total, Responses* out) {
  std::shared_ptr<SharedRegion> region;
  absl::StatusOr<absl::Span<uint8_t>> into = state.SharedSpanOf(span, total, &region);
  if (!into.ok()) return SessionState::Reply(id, into.status(), out);
  std::vector<uint64_t> starts;  // where each read lands in the span
  uint64_t at = 0;
  for (const RangeRef& r : reads) {
    starts.push_back(at);
    at += r.length;
  }
  const absl::Status status =
      state.ticket->session().Read(reads, [&](size_t i, uint64_t offset, uint64_t length) {
        return into->subspan(starts[i] + offset, length);
      });
  if (status.ok()) state.stats.bytes_down += total;
  SessionState::Reply(id, status, out);
}

void Read(SessionState& state, uint64_t id, const v1::ReadRequest& request, Responses* out) {
  if (absl::Status open = state.RequireOpen(); !open.ok()) {
    return SessionState::Reply(id, open, out);
  }
  // Too many ranges are refused before they are copied (24 bytes each, uncounted).
  if (absl::Status counts = state.ticket->session().CheckExecuteCounts(
          0, 0, request.ranges_size(), [](size_t) { return std::pair<uint64_t, uint64_t>(); });
      !counts.ok()) {
    return SessionState::Reply(id, counts, out);
  }
  std::vector<RangeRef> reads = RangesFromProto(request.ranges());
  if (request.has_shared()) {
    return ReadShared(state, id, request.shared(), reads, TotalLength(reads), out);
  }
  ReadInto(
      state, id, std::move(reads), /*may_stream=*/true,
      [&](absl::Span<const RangeRef> all) {
        return state.ticket->session().CheckExecute({}, {}, all);
      },
      [&](absl::Span<const RangeRef> window, ReadSink sink) {
        return state.ticket->session().Read(window, sink);
      },
      out);
}

}  // namespace

void ReadInto(SessionState& state, uint64_t id, std::vector<RangeRef> reads, bool may_stream,
              ReadCheck check, ReadRun run, Responses* out) {
  const uint64_t total = TotalLength(reads);
  const uint64_t chunk = state.chunk_size.load();
  if (may_stream && total > ReadWindowBytes(chunk)) {
    return StreamedRead::Start(state, id, std::move(reads), total, check, run, out);
  }
  // The sink only runs once the session has validated every read, so the total is real. What
  // the replies hold is reserved at the sink's first call, after validation (so a bad read
  // gets its own code) and before anything runs (so a refusal changes nothing): but no more
  // than the read's bytes and the largest chunk, which the largest request always finds (see
  // LargestRequestBytes; a resumable session's execute does not stream, and its replies in
  // small chunks may hold more): the rest is counted once the replies are made. Small reads
  // reserve nothing and land in replies of their own: polls of a few state words never fail
  // for want of memory that large transfers hold (the session's flow control bounds them).
  const bool cheap = total <= kCheapBytes;
  const uint64_t reserved =
      std::min(ReplyBytes(total, chunk), total + state.manager->options().max_chunk_size);
  const size_t first = out->size();
  absl::Status refused;
  const absl::Status status = LandReads(
      state, id, reads, 0, total, cheap ? nullptr : &state.read_block,
      [&] {
        if (cheap) return true;
        absl::StatusOr<TransferBudget::Hold> hold =
            state.Transfers().Reserve(reserved, "a read");
        if (!hold.ok()) {
          refused = hold.status();
          return false;
        }
        state.read_hold = *std::move(hold);
        return true;
      },
      [&](ReadSink sink) { return run(reads, sink); }, out);
  if (!status.ok()) {
    out->erase(out->begin() + static_cast<ptrdiff_t>(first), out->end());
    state.read_hold.Release();
    state.read_block = ReplyBlock();
    return SessionState::Reply(id, refused.ok() ? status : refused, out);
  }
  state.stats.bytes_down += total;
  if (out->size() == first) {  // nothing to read: one empty chunk
    v1::SessionResponse& response = out->emplace_back();
    response.set_id(id);
    response.mutable_data()->set_total(0);
  }
  out->back().set_last(true);
  out->back().mutable_status();
}

std::vector<RangeRef> StreamedRead::Take(uint64_t length) {
  std::vector<RangeRef> pieces;
  while (length > 0 && read_ < reads_.size()) {
    const RangeRef& r = reads_[read_];
    const uint64_t n = std::min(length, r.length - within_);
    if (n > 0) pieces.push_back(RangeRef{r.handle, r.offset + within_, n});
    length -= n;
    next_ += n;
    within_ += n;
    if (within_ == r.length) {
      ++read_;
      within_ = 0;
    }
  }
  return pieces;
}

void StreamedRead::Start(SessionState& state, uint64_t id, std::vector<RangeRef> reads,
                         uint64_t total, ReadCheck check, ReadRun run, Responses* out) {
  // All of it is checked first, as a read of it whole would be (an execute's steps first), so
  // a bad request gets the code it would get whole, and nothing is sent (or run).
  if (absl::Status valid = check(reads); !valid.ok()) {
    return SessionState::Reply(id, valid, out);
  }
  const uint64_t chunk = state.chunk_size.load();
  absl::StatusOr<TransferBudget::Hold> hold =
      state.Transfers().Reserve(ReadHoldBytes(total, chunk), "a read");
  if (!hold.ok()) return SessionState::Reply(id, hold.status(), out);
  auto read = std::make_unique<StreamedRead>();
  read->id_ = id;
  read->reads_ = std::move(reads);
  read->total_ = total;
  read->window_ = ReadWindowBytes(chunk);
  read->hold_ = *std::move(hold);
  state.streamed = std::move(read);
  state.stats.bytes_down += total;
  Window(state, run, out).IgnoreError();  // an error is the request's, counted by Run
}

void StreamedRead::Continue(SessionState& state, Responses* out) {
  const absl::Status status = Window(
      state,
      [&](absl::Span<const RangeRef> pieces, ReadSink sink) {
        return state.ticket->session().Read(pieces, sink);
      },
      out);
  if (!status.ok()) ++state.stats.errors;
}

absl::Status StreamedRead::Window(SessionState& state, ReadRun run, Responses* out) {
  StreamedRead& s = *state.streamed;
  const uint64_t base = s.next_;
  const std::vector<RangeRef> pieces = s.Take(std::min(s.window_, s.total_ - s.next_));
  const size_t first = out->size();
  const absl::Status status = LandReads(
      state, s.id_, pieces, base, s.total_, &state.read_block, [] { return true; },
      [&](ReadSink sink) { return run(pieces, sink); }, out);
  if (!status.ok()) {
    // All of it was checked when it began, so only the device (or, in the first window, an
    // execute's steps) can fail it now.
    out->erase(out->begin() + static_cast<ptrdiff_t>(first), out->end());
    state.read_block = ReplyBlock();
    state.stats.bytes_down -= s.total_ - base;
    SessionState::Reply(s.id_, status, out);
  } else if (s.next_ < s.total_) {
    return status;
  } else {
    out->back().set_last(true);
    out->back().mutable_status();
  }
  state.read_hold = std::move(s.hold_);
  state.streamed.reset();
  return status;
}

void AcceptRead(SessionState& state, v1::SessionRequest& request, Job& job) {
  // Its bytes summed in the message, not in a copy of its ranges; too many are refused when it
  // runs.
  job.cheap = static_cast<uint64_t>(request.read().ranges_size()) <= state.limits.max_ranges &&
              TotalLength(request.read().ranges()) <= kCheapBytes;
  job.run = [&state, id = job.id, read = std::move(*request.mutable_read())](Responses* out) {
    Read(state, id, read, out);
  };
}

}  // namespace sluice
