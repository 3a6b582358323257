// Execute: kernel steps (a prefix, then a group repeated), then reads behind them, all behind
// one fence; it stops at its next step, iteration or chunk when cancelled, when its stream
// goes, or at the daemon's --max_request_seconds. Reads of more than a window stream, their
// first window behind the fence and the rest as a plain read's, but in a resumable session,
// which keeps an execute's replies whole to send them again after a resume.
#include "sluice/proto/codec.h"
#include "sluice/server/metrics.h"
#include "sluice/server/ops/handlers.h"
#include "sluice/server/ops/read.h"

namespace sluice {
namespace {

void Execute(SessionState& state, uint64_t id, const v1::ExecuteRequest& request,
             const std::atomic<bool>* cancelled, Responses* out) {
  if (absl::Status open = state.RequireOpen(); !open.ok()) {
    return SessionState::Reply(id, open, out);
  }
  // Refused on their counts before they are copied out of the message (a step's copy is 72
  // bytes, where an empty step is two on the wire; a step's bindings are looked up with 40 bytes
  // each): what the request makes the daemon hold beside its message stays bounded.
  const auto step_at = [&](size_t s) -> const v1::Step& {
    return s < static_cast<size_t>(request.prefix_size())
               ? request.prefix(static_cast<int>(s))
               : request.repeated(static_cast<int>(s) - request.prefix_size());
  };
  if (absl::Status counts = state.ticket->session().CheckExecuteCounts(
          request.prefix_size(), request.repeated_size(), request.reads_size(),
          [&](size_t s) {
            return std::pair<uint64_t, uint64_t>{step_at(s).handles_size(),
                                                 step_at(s).params_size()};
          });
      !counts.ok()) {
    return SessionState::Reply(id, counts, out);
  }
  const std::vector<StepRef> prefix = StepsFromProto(request.prefix());
  const std::vector<StepRef> repeated = StepsFromProto(request.repeated());
  // Its plan, while it runs, is counted to the client: a step's is over a kilobyte, where the
  // step may be two bytes on the wire. A chunk's room is left beside it, so that the client's
  // streams are still read meanwhile (a cancel). A step of a kernel the catalog lacks is
  // refused as such, before any plan.
  TransferBudget::Hold plan;
  const uint64_t plan_bytes = Session::ExecutePlanBytes(prefix, repeated).value_or(0);
  if (plan_bytes > kCheapBytes) {
    absl::StatusOr<TransferBudget::Hold> held = state.Transfers().ReserveLeaving(
        plan_bytes, state.manager->options().max_chunk_size,
        "an execute's plan of its steps (with a chunk's room beside it)");
    if (!held.ok()) return SessionState::Reply(id, held.status(), out);
    plan = *std::move(held);
  }
  const uint64_t seconds = state.limits.max_request_seconds;
  const Interrupt interrupt(&state.stream_cancelled, cancelled,
                            seconds == 0 ? absl::InfiniteFuture()
                                         : absl::Now() + absl::Seconds(seconds));
  bool ran = false;
  ReadInto(
      state, id, RangesFromProto(request.reads()), /*may_stream=*/state.resume_token.empty(),
      [&](absl::Span<const RangeRef> reads) {
        return state.ticket->session().CheckExecute(prefix, repeated, reads);
      },
      [&](absl::Span<const RangeRef> reads, ReadSink sink) {
        absl::Status status = state.ticket->session().Execute(
            prefix, repeated, request.repeat_count(), reads, sink, interrupt);
        ran = status.ok();
        return status;
      },
      out);
  if (!ran) return;
  const uint64_t steps = prefix.size() + uint64_t{request.repeat_count()} * repeated.size();
  ++state.stats.executes;
  state.stats.steps += steps;
  if (state.metrics != nullptr) state.metrics->Executed(steps, request.repeat_count());
}

}  // namespace

void AcceptExecute(SessionState& state, v1::SessionRequest& request, Job& job) {
  job.run = [&state, id = job.id, execute = std::move(*request.mutable_execute()),
             cancelled = job.cancelled.get()](Responses* out) {
    Execute(state, id, execute, cancelled, out);
  };
}

}  // namespace sluice
