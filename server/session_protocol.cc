#include "sluice/server/session_protocol.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "sluice/base/log.h"
#include "sluice/server/metrics.h"
#include "sluice/server/ops/op_table.h"

namespace sluice {

SessionProtocol::SessionProtocol(SessionManager* manager, std::string peer,
                                 SessionManager::Listener* listener,
                                 std::optional<Principal> principal, Resumer* resumer,
                                 Metrics* metrics, SharedRegions* shared_regions)
    : state_(manager, std::move(peer), listener, std::move(principal), resumer, metrics,
             shared_regions) {}

// ---- Read path --------------------------------------------------------------------------------

void SessionProtocol::Accept(v1::SessionRequest& request, std::vector<Job>* jobs) {
  if (uploads_.Take(request, jobs)) return;
  const OpSpec* spec = FindOp(request.op_case());
  if (spec == nullptr || spec->accept == nullptr) {
    // OP_NOT_SET, or an upload's case reaching here (it cannot: the assembly takes them).
    jobs->push_back(RefusalJob(request.id(), request.op_case(),
                               absl::InvalidArgumentError("the request carries no operation")));
    return;
  }
  // Until it runs, a request holds its message, counted in its client's share: a large one (an
  // execute of many steps, a read of many ranges) reserves it first, as an upload does; a
  // small one is charged (the stream reads no more while the share has no room). A cancel
  // acts on arrival. What is counted is the memory the parsed message holds, which may be
  // many times its size on the wire: an empty step or range takes 2 bytes there and a message
  // of its own here.
  const uint64_t bytes = std::max<uint64_t>(request.ByteSizeLong(), request.SpaceUsedLong());
  TransferBudget::Hold hold;
  if (bytes > kCheapBytes && spec->cancel != OpCancel::kNever) {
    absl::StatusOr<TransferBudget::Hold> reserved =
        state_.Transfers().Reserve(bytes, "a queued request");
    if (!reserved.ok()) {
      jobs->push_back(RefusalJob(request.id(), request.op_case(), reserved.status()));
      return;
    }
    hold = *std::move(reserved);
  } else {
    hold = state_.Transfers().Charge(bytes);
  }
  Job job = NewJob(state_, *spec, request.id());
  spec->accept(state_, request, job);
  job.staged = bytes;
  job.hold = std::move(hold);
  jobs->push_back(std::move(job));
}

void SessionProtocol::Refuse(v1::SessionRequest& head, absl::Status why,
                             std::vector<Job>* jobs) {
  if (uploads_.Take(head, jobs, why)) return;
  jobs->push_back(RefusalJob(head.id(), head.op_case(), std::move(why)));
}

std::optional<v1::SessionRequest> SessionProtocol::HeadOf(
    google::protobuf::io::ZeroCopyInputStream* in) {
  using google::protobuf::io::CodedInputStream;
  constexpr uint32_t kVarint = 0, kLengthDelimited = 2;
  v1::SessionRequest head;
  CodedInputStream coded(in);
  const auto skip = [&coded](uint32_t tag) {
    return google::protobuf::internal::WireFormatLite::SkipField(&coded, tag);
  };
  for (uint32_t tag; (tag = coded.ReadTag()) != 0;) {
    const uint32_t field = tag >> 3;
    uint64_t value;
    if (field == v1::SessionRequest::kIdFieldNumber && (tag & 7) == kVarint) {
      if (!coded.ReadVarint64(&value)) return std::nullopt;
      head.set_id(value);
    } else if (field == v1::SessionRequest::kSettledThroughFieldNumber && (tag & 7) == kVarint) {
      if (!coded.ReadVarint64(&value)) return std::nullopt;
      head.set_settled_through(value);
    } else if (field >= v1::SessionRequest::kOpenFieldNumber &&
               field <= v1::SessionRequest::kCancelFieldNumber &&
               (tag & 7) == kLengthDelimited) {
      // The operation: the last one given is the one a parse keeps. Its message is read only
      // for an upload's `last`, merged as a parse merges an operation given twice.
      uint32_t length;
      if (!coded.ReadVarint32(&length)) return std::nullopt;
      const CodedInputStream::Limit limit = coded.PushLimit(static_cast<int>(length));
      const google::protobuf::FieldDescriptor* op =
          v1::SessionRequest::descriptor()->FindFieldByNumber(static_cast<int>(field));
      head.GetReflection()->MutableMessage(&head, op);  // the oneof's case, kept if it was set
      for (uint32_t inner; (inner = coded.ReadTag()) != 0;) {
        if (field == v1::SessionRequest::kUploadFieldNumber &&
            inner >> 3 == v1::UploadRequest::kLastFieldNumber && (inner & 7) == kVarint) {
          if (!coded.ReadVarint64(&value)) return std::nullopt;
          head.mutable_upload()->set_last(value != 0);
        } else if (!skip(inner)) {
          return std::nullopt;
        }
      }
      if (!coded.ConsumedEntireMessage()) return std::nullopt;
      coded.PopLimit(limit);
    } else if (!skip(tag)) {
      return std::nullopt;
    }
  }
  if (!coded.ConsumedEntireMessage()) return std::nullopt;
  return head;
}

// ---- Job path ---------------------------------------------------------------------------------

void SessionProtocol::Run(Job& job, Responses* out) {
  const absl::Time start = absl::Now();
  if (job.cancelled != nullptr && job.cancelled->load()) {
    SessionState::Reply(job.id, absl::CancelledError("cancelled before it ran"), out);
  } else {
    std::move(job.run)(out);
  }
  Skip(job);
  ++state_.stats.requests;
  const int code = out->empty() ? 0 : out->back().status().code();
  if (code != 0) ++state_.stats.errors;
  if (state_.metrics != nullptr) {
    state_.metrics->RequestDone(
        job.op, static_cast<absl::StatusCode>(code),
        job.accepted == absl::Time() ? absl::ZeroDuration() : start - job.accepted,
        absl::Now() - start);
  }
}

void SessionProtocol::Skip(Job& job) {
  job.run = nullptr;  // an upload's data goes now
  job.hold.Release();
  if (job.cancelled != nullptr) state_.Unregister(job.id, job.cancelled);
}

// ---- Teardown ---------------------------------------------------------------------------------

std::unique_ptr<SessionProtocol::Carried> SessionProtocol::Detach(const char* why) {
  state_.streamed.reset();  // a read sent again runs again
  state_.Withdraw();
  if (state_.ticket == nullptr) return nullptr;
  auto carried = std::make_unique<Carried>();
  carried->log_fields = state_.Fields();
  carried->ticket = std::move(state_.ticket);
  carried->client_name = state_.client_name;
  carried->log_key = state_.LogKey();
  carried->chunk_size = state_.chunk_size.load();
  carried->resume_token = state_.resume_token;
  carried->shared = std::move(state_.shared);
  carried->shared_token = state_.shared_token;
  carried->stats = state_.stats;
  carried->started = state_.started;
  LogLimited(carried->log_key,
             absl::StrFormat("session %s lost its stream (%s): it waits %s for its client to "
                             "resume it",
                             carried->ticket->id(), why,
                             absl::FormatDuration(state_.resumer->resume_grace())),
             carried->log_fields);
  return carried;
}

std::unique_ptr<SessionManager::Ticket> SessionProtocol::Close(const char* why) {
  state_.streamed.reset();
  state_.Withdraw();
  if (state_.ticket == nullptr) return nullptr;
  CarriedSession summary;
  summary.log_fields = state_.Fields();
  summary.ticket = std::move(state_.ticket);
  summary.log_key = state_.LogKey();
  summary.stats = state_.stats;
  summary.started = state_.started;
  summary.Log(why);
  return std::move(summary.ticket);
}

}  // namespace sluice
