#include "server/session_protocol.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "proto/codec.h"
#include "server/shared_memory.h"

namespace sluice {
namespace {

// Requests moving at most this many bytes, with no kernel steps, may run inline on the
// transport's thread when the session has nothing else queued: copying a few bytes is no device
// wait. Transfers this small need no share of the daemon's transfer budget either.
constexpr uint64_t kCheapBytes = 64 << 10;

// Sum of lengths, saturating at 2^64 - 1 so that absurd requests cannot wrap to small ones.
uint64_t TotalLength(absl::Span<const RangeRef> ranges) {
  uint64_t total = 0;
  for (const RangeRef& r : ranges) {
    total = r.length > ~uint64_t{0} - total ? ~uint64_t{0} : total + r.length;
  }
  return total;
}

// Client names land in the log: keep them short and printable.
std::string Printable(const std::string& name) {
  std::string out = name.substr(0, kMaxClientNameBytes);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e || c == '"') c = '?';
  }
  return out;
}

// The host part of a gRPC peer ("ipv4:10.0.0.7:51234" -> "ipv4:10.0.0.7").
std::string PeerHost(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos || colon < 5 ? peer : peer.substr(0, colon);
}

absl::Status NotOpenError() {
  return absl::FailedPreconditionError(
      "the session is not open: the first request of a stream must be open");
}

}  // namespace

SessionProtocol::SessionProtocol(SessionManager* manager, std::string peer,
                                 SessionManager::Listener* listener,
                                 std::optional<Principal> principal, Resumer* resumer,
                                 Metrics* metrics, SharedRegions* shared_regions)
    : manager_(manager),
      resumer_(resumer),
      metrics_(metrics),
      shared_regions_(shared_regions),
      peer_(std::move(peer)),
      principal_(std::move(principal)),
      listener_(listener),
      limits_(manager->options().limits),
      started_(absl::Now()),
      chunk_size_(manager->options().max_chunk_size) {}

TransferBudget& SessionProtocol::Transfers() const {
  TransferBudget* client = transfers_.load();
  return client != nullptr ? *client : manager_->transfers();
}

// ---- Read path --------------------------------------------------------------------------------

void SessionProtocol::Accept(v1::SessionRequest& request, std::vector<Job>* jobs) {
  const bool is_upload = request.op_case() == v1::SessionRequest::kUpload;
  if (is_upload && discarding_ == request.id() && request.upload().ranges_size() == 0 &&
      !(upload_.has_value() && upload_->id == request.id())) {
    // A later message of an upload that was already answered.
    if (request.upload().last()) discarding_.reset();
    return;
  }
  if (upload_.has_value() && !(is_upload && request.id() == upload_->id)) {
    EndUpload(absl::InvalidArgumentError(absl::StrFormat(
                  "upload %d was interrupted by request %d before its last chunk", upload_->id,
                  request.id())),
              jobs, /*more_may_follow=*/true);
  }
  if (is_upload) {
    AcceptUpload(request, jobs);
    return;
  }
  // Until it runs, a request holds its message: a large one (an execute of many steps, a read
  // of many ranges) reserves it from the daemon's transfer budget first, as an upload does.
  const uint64_t bytes = request.ByteSizeLong();
  TransferBudget::Hold hold;
  if (bytes > kCheapBytes && request.op_case() != v1::SessionRequest::kCancel) {
    absl::StatusOr<TransferBudget::Hold> reserved =
        Transfers().Reserve(bytes, "a queued request");
    if (!reserved.ok()) {
      jobs->push_back(ReplyJob(request.id(), request.op_case(), reserved.status()));
      return;
    }
    hold = *std::move(reserved);
  }
  Job job = MakeJob(request);
  if (job.run != nullptr) {
    job.staged = bytes;
    job.hold = std::move(hold);
  }
  jobs->push_back(std::move(job));
}

void SessionProtocol::EndOfInput(std::vector<Job>* jobs) {
  if (upload_.has_value()) {
    EndUpload(absl::InvalidArgumentError(absl::StrFormat(
                  "upload %d: the stream ended before its last chunk", upload_->id)),
              jobs, /*more_may_follow=*/false);
  }
  discarding_.reset();
}

absl::Status SessionProtocol::CheckFirstMessage(const v1::UploadRequest& first,
                                                PendingUpload& up) {
  // Checked here, not only when the job runs, so that no data is held for a doomed upload.
  if (!open_seen_ || open_refused_.load()) return NotOpenError();
  if (static_cast<uint64_t>(first.ranges_size()) > limits_.max_ranges) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d ranges in one upload; the limit is %d", first.ranges_size(), limits_.max_ranges));
  }
  up.ranges = RangesFromProto(first.ranges());
  up.expected = TotalLength(up.ranges);
  if (up.expected > limits_.max_request_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("an upload of %d bytes exceeds the per-request limit of %d bytes",
                        up.expected, limits_.max_request_bytes));
  }
  if (Session* session = session_.load(); session != nullptr && !resuming_) {
    RETURN_IF_ERROR(session->CheckUploadRanges(
        up.ranges, [this](uint64_t handle) { return QueuedSize(handle); }));
  }
  if (up.expected > kCheapBytes) {
    // The data is reserved as it arrives: a client that declares a large upload and stalls
    // holds only what it sent.
    ASSIGN_OR_RETURN(up.hold, Transfers().Reserve(0, "an upload"));
  }
  return absl::OkStatus();
}

void SessionProtocol::AcceptUpload(v1::SessionRequest& request, std::vector<Job>* jobs) {
  v1::UploadRequest& chunk = *request.mutable_upload();
  const bool last = chunk.last();
  if (!upload_.has_value()) {
    if (discarding_ == request.id()) discarding_.reset();  // a new upload with this id
    upload_ = PendingUpload{.id = request.id()};
    if (absl::Status refused = CheckFirstMessage(chunk, *upload_); !refused.ok()) {
      return EndUpload(std::move(refused), jobs, /*more_may_follow=*/!last);
    }
  } else if (chunk.ranges_size() > 0) {
    return EndUpload(
        absl::InvalidArgumentError("ranges may only appear in the first message of an upload"),
        jobs, !last);
  }
  PendingUpload& up = *upload_;
  if (chunk.has_shared()) {
    // All of it is in the client's shared memory: one message, nothing held here.
    if (!last || !chunk.data().empty() || up.received > 0) {
      return EndUpload(absl::InvalidArgumentError(
                           "an upload from shared memory is one message, with no data"),
                       jobs, !last);
    }
    if (chunk.shared().length() != up.expected) {
      return EndUpload(absl::InvalidArgumentError(absl::StrFormat(
                           "the shared span holds %d bytes; the ranges hold %d",
                           chunk.shared().length(), up.expected)),
                       jobs, false);
    }
    up.shared = chunk.shared();
    up.received = up.expected;
    up.hold.Release();
    return EndUpload(absl::OkStatus(), jobs, /*more_may_follow=*/false);
  }
  const uint64_t n = chunk.data().size();
  const uint32_t chunk_limit = chunk_size_.load();
  if (n > chunk_limit) {
    return EndUpload(absl::InvalidArgumentError(absl::StrFormat(
                         "a chunk of %d bytes exceeds the negotiated chunk size of %d bytes", n,
                         chunk_limit)),
                     jobs, !last);
  }
  if (n > up.expected - up.received) {
    return EndUpload(absl::InvalidArgumentError(absl::StrFormat(
                         "upload data exceeds the %d bytes its ranges describe", up.expected)),
                     jobs, !last);
  }
  if (n > 0) {
    if (up.expected > kCheapBytes) {
      if (absl::Status held = up.hold.Extend(n, "an upload"); !held.ok()) {
        return EndUpload(std::move(held), jobs, !last);
      }
    }
    up.received += n;
    up.chunks.push_back(std::move(*chunk.mutable_data()));
  }
  if (last) EndUpload(absl::OkStatus(), jobs, /*more_may_follow=*/false);
}

void SessionProtocol::EndUpload(absl::Status error, std::vector<Job>* jobs,
                                bool more_may_follow) {
  PendingUpload up = std::move(*upload_);
  upload_.reset();
  if (error.ok() && up.received != up.expected) {
    error = absl::InvalidArgumentError(absl::StrFormat(
        "upload ended after %d of the %d bytes its ranges describe", up.received, up.expected));
  }
  if (!error.ok()) {
    // Nothing of it will be written: its data and reservation go now, its reply is queued
    // now, and its later messages are dropped as they come.
    if (more_may_follow) discarding_ = up.id;
    jobs->push_back(ReplyJob(up.id, v1::SessionRequest::kUpload, std::move(error)));
    return;
  }
  Job job;
  job.id = up.id;
  job.op = v1::SessionRequest::kUpload;
  job.accepted = absl::Now();
  job.cheap = up.expected <= kCheapBytes;
  job.staged = up.shared.has_value() ? 0 : up.received;  // shared memory is the client's
  job.cancelled = NewCancelFlag(up.id);
  job.run = [this, up = std::move(up)](Responses* out) { DoUpload(up, out); };
  jobs->push_back(std::move(job));
}

// An allocation's chosen handle, registered while its job waits to run (see queued_).
class SessionProtocol::QueuedHandle {
 public:
  QueuedHandle(SessionProtocol* protocol, uint64_t handle, uint64_t bytes)
      : protocol_(protocol), handle_(handle) {
    if (protocol_ == nullptr) return;
    absl::MutexLock lock(&protocol_->queued_mu_);
    QueuedAllocation& queued = protocol_->queued_[handle_];
    ++queued.count;
    queued.bytes = bytes;
  }
  QueuedHandle(QueuedHandle&& other) noexcept
      : protocol_(std::exchange(other.protocol_, nullptr)), handle_(other.handle_) {}
  QueuedHandle& operator=(QueuedHandle&&) = delete;
  ~QueuedHandle() {
    if (protocol_ != nullptr) protocol_->Unqueue(handle_);
  }

 private:
  SessionProtocol* protocol_;
  uint64_t handle_;
};

void SessionProtocol::Unqueue(uint64_t handle) {
  absl::MutexLock lock(&queued_mu_);
  auto it = queued_.find(handle);
  if (it != queued_.end() && --it->second.count == 0) queued_.erase(it);
}

std::optional<uint64_t> SessionProtocol::QueuedSize(uint64_t handle) {
  absl::MutexLock lock(&queued_mu_);
  auto it = queued_.find(handle);
  if (it == queued_.end()) return std::nullopt;
  return it->second.bytes;
}

SessionProtocol::Job SessionProtocol::ReplyJob(uint64_t id, v1::SessionRequest::OpCase op,
                                               absl::Status status) {
  Job job;
  job.id = id;
  job.op = op;
  job.accepted = absl::Now();
  job.cheap = true;
  job.run = [id, status = std::move(status)](Responses* out) { Reply(id, status, out); };
  return job;
}

std::shared_ptr<std::atomic<bool>> SessionProtocol::NewCancelFlag(uint64_t id) {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  absl::MutexLock lock(&cancel_mu_);
  pending_.emplace(id, flag);
  return flag;
}

int SessionProtocol::CancelPending(uint64_t target) {
  absl::MutexLock lock(&cancel_mu_);
  int found = 0;
  for (auto [it, end] = pending_.equal_range(target); it != end; ++it) {
    it->second->store(true);
    ++found;
  }
  return found;
}

SessionProtocol::Job SessionProtocol::MakeJob(v1::SessionRequest& request) {
  Job job;
  const uint64_t id = request.id();
  job.id = id;
  job.op = request.op_case();
  job.accepted = absl::Now();
  // Every request that runs can be cancelled before it does.
  if (request.op_case() != v1::SessionRequest::kCancel &&
      request.op_case() != v1::SessionRequest::OP_NOT_SET &&
      request.op_case() != v1::SessionRequest::kExecute) {
    job.cancelled = NewCancelFlag(id);
  }
  switch (request.op_case()) {
    case v1::SessionRequest::kOpen:
      // Chunks of requests pipelined behind the open are checked against the negotiated size.
      if (!open_seen_) {
        open_seen_ = true;
        // A resume takes its session's chunk size when it runs; until then any the daemon
        // allows is taken.
        resuming_ = !request.open().resume_token().empty();
        chunk_size_.store(resuming_ ? manager_->options().max_chunk_size
                                    : manager_->options().NegotiateChunkSize(
                                          request.open().chunk_size()));
      }
      job.open = true;
      job.run = [this, id, open = std::move(*request.mutable_open())](Responses* out) {
        DoOpen(id, open, out);
      };
      break;
    case v1::SessionRequest::kAllocate: {
      const uint64_t bytes = request.allocate().bytes();
      const uint64_t chosen = request.allocate().handle();
      QueuedHandle queued(chosen != 0 ? this : nullptr, chosen, bytes);
      job.run = [this, id, bytes, chosen, queued = std::move(queued)](Responses* out) {
        DoAllocate(id, bytes, chosen, out);
      };
      break;
    }
    case v1::SessionRequest::kRead:
      job.read_only = true;
      job.cheap = TotalLength(RangesFromProto(request.read().ranges())) <= kCheapBytes &&
                  static_cast<uint64_t>(request.read().ranges_size()) <= limits_.max_ranges;
      job.run = [this, id, read = std::move(*request.mutable_read())](Responses* out) {
        DoRead(id, read, out);
      };
      break;
    case v1::SessionRequest::kFree:
      // Not cheap: a device's free may wait for the device (cudaFree does).
      job.run = [this, id, handle = request.free().handle()](Responses* out) {
        DoFree(id, handle, out);
      };
      break;
    case v1::SessionRequest::kExecute:
      job.cancelled = NewCancelFlag(id);
      job.run = [this, id, execute = std::move(*request.mutable_execute()),
                 cancelled = job.cancelled.get()](Responses* out) {
        DoExecute(id, execute, cancelled, out);
      };
      break;
    case v1::SessionRequest::kCancel: {
      const int found = CancelPending(request.cancel().target());
      return ReplyJob(id, v1::SessionRequest::kCancel, found > 0 ? absl::OkStatus()
                                    : absl::NotFoundError(absl::StrFormat(
                                          "no unfinished request with id %d to cancel",
                                          request.cancel().target())));
    }
    case v1::SessionRequest::kPing:
      job.cheap = true;
      job.read_only = true;
      job.run = [this, id, ping = std::move(*request.mutable_ping())](Responses* out) mutable {
        DoPing(id, ping, out);
      };
      break;
    case v1::SessionRequest::kUpload:  // assembled by AcceptUpload
    case v1::SessionRequest::OP_NOT_SET:
      return ReplyJob(id, request.op_case(),
                      absl::InvalidArgumentError("the request carries no operation"));
  }
  return job;
}

// ---- Job path ---------------------------------------------------------------------------------

void SessionProtocol::Run(Job& job, Responses* out) {
  const absl::Time start = absl::Now();
  if (job.cancelled != nullptr && job.cancelled->load()) {
    Reply(job.id, absl::CancelledError("cancelled before it ran"), out);
  } else {
    std::move(job.run)(out);
  }
  Skip(job);
  ++stats_.requests;
  const int code = out->empty() ? 0 : out->back().status().code();
  if (code != 0) ++stats_.errors;
  if (metrics_ != nullptr) {
    metrics_->RequestDone(job.op, static_cast<absl::StatusCode>(code),
                          job.accepted == absl::Time() ? absl::ZeroDuration() : start - job.accepted,
                          absl::Now() - start);
  }
}

void SessionProtocol::Skip(Job& job) {
  job.run = nullptr;  // an upload's data goes now
  job.hold.Release();
  if (job.cancelled != nullptr) {
    absl::MutexLock lock(&cancel_mu_);
    for (auto [it, end] = pending_.equal_range(job.id); it != end; ++it) {
      if (it->second == job.cancelled) {
        pending_.erase(it);
        break;
      }
    }
  }
}

std::string SessionProtocol::LogKey() const {
  return absl::StrFormat("%s \"%s\"", PeerHost(peer_), client_name_);
}

LogFields SessionProtocol::Fields() const {
  return {.session = ticket_ != nullptr ? ticket_->id() : "",
          .peer = peer_,
          .client = client_name_,
          .tenant = Owner()};
}

void SessionProtocol::Carried::Log(const char* why) const {
  if (ticket == nullptr) return;
  LogLimited(log_key, absl::StrFormat(
                 "session %s closed (%s) after %.3fs: %d requests (%d failed), %d allocations, "
                 "%d frees, %d executes (%d kernel steps), %d bytes up, %d bytes down; "
                 "%d buffers (%d bytes) freed at close",
                 ticket->id(), why, absl::ToDoubleSeconds(absl::Now() - started), stats.requests,
                 stats.errors, stats.allocations, stats.frees, stats.executes, stats.steps,
                 stats.bytes_up, stats.bytes_down, ticket->session().buffer_count(),
                 ticket->session().bytes_in_use()),
             log_fields);
}

std::unique_ptr<SessionProtocol::Carried> SessionProtocol::Detach(const char* why) {
  streamed_.reset();  // a read sent again runs again
  session_.store(nullptr);
  transfers_.store(nullptr);
  if (ticket_ == nullptr) return nullptr;
  ticket_->Listen(nullptr);
  auto carried = std::make_unique<Carried>();
  carried->log_fields = Fields();
  carried->ticket = std::move(ticket_);
  carried->client_name = client_name_;
  carried->log_key = LogKey();
  carried->chunk_size = chunk_size_.load();
  carried->resume_token = resume_token_;
  carried->shared = std::move(shared_);
  carried->shared_token = shared_token_;
  carried->stats = stats_;
  carried->started = started_;
  LogLimited(carried->log_key,
             absl::StrFormat("session %s lost its stream (%s): it waits %s for its client to "
                             "resume it",
                             carried->ticket->id(), why,
                             absl::FormatDuration(resumer_->resume_grace())),
             carried->log_fields);
  return carried;
}

std::unique_ptr<SessionManager::Ticket> SessionProtocol::Close(const char* why) {
  streamed_.reset();
  session_.store(nullptr);
  transfers_.store(nullptr);
  if (ticket_ != nullptr) {
    ticket_->Listen(nullptr);
    Carried summary;
    summary.log_fields = Fields();
    summary.ticket = std::move(ticket_);
    summary.log_key = LogKey();
    summary.stats = stats_;
    summary.started = started_;
    summary.Log(why);
    return std::move(summary.ticket);
  }
  return nullptr;
}

void SessionProtocol::Reply(uint64_t id, const absl::Status& status, Responses* out) {
  v1::SessionResponse& response = out->emplace_back();
  response.set_id(id);
  response.set_last(true);
  ToProto(status, response.mutable_status());
}

absl::Status SessionProtocol::RequireOpen() const {
  if (ticket_ != nullptr) return absl::OkStatus();
  return NotOpenError();
}

void SessionProtocol::DoOpen(uint64_t id, const v1::OpenRequest& request, Responses* out) {
  if (ticket_ != nullptr) {
    Reply(id, absl::FailedPreconditionError("the session is already open"), out);
    return;
  }
  if (!request.resume_token().empty()) return DoResume(id, request, out);
  client_name_ = Printable(request.client_name());
  // A tenant's sessions share its limits; without tenants, a client is its host and the name
  // it gives: sessions and memory are shared out by that.
  absl::StatusOr<std::unique_ptr<SessionManager::Ticket>> ticket =
      principal_.has_value()
          ? manager_->Open(*principal_)
          : manager_->Open(absl::StrCat(PeerHost(peer_), "\n",
                                        request.client_name().substr(0, kMaxClientNameBytes)));
  if (!ticket.ok()) {
    open_refused_.store(true);  // uploads that follow are refused as they arrive
    Reply(id, ticket.status(), out);
    return;
  }
  open_refused_.store(false);
  ticket_ = std::move(*ticket);
  transfers_.store(&ticket_->transfers());
  session_.store(&ticket_->session());
  ticket_->Listen(listener_);
  const DeviceInfo& device = manager_->device().info();
  LogLimited(LogKey(),
             absl::StrFormat("session %s opened by \"%s\"%s from %s on %s; chunk %d bytes",
                             ticket_->id(), client_name_,
                             principal_.has_value()
                                 ? absl::StrFormat(" of tenant %s", principal_->tenant)
                                 : "",
                             peer_, device.id, chunk_size_.load()),
             Fields());

  if (request.resumable() && resumer_ != nullptr &&
      resumer_->resume_grace() > absl::ZeroDuration()) {
    resume_token_ = resumer_->RegisterResumable(
        Owner(), principal_.has_value() ? principal_->credential : "");
  }
  if (request.shared_memory() && shared_regions_ != nullptr) {
    shared_ = std::make_shared<SharedSlot>();
    shared_token_ = shared_regions_->Offer(shared_);
  }
  ReplyOpened(id, out);
}

void SessionProtocol::ReplyOpened(uint64_t id, Responses* out) {
  const DeviceInfo& device = manager_->device().info();
  v1::SessionResponse& response = out->emplace_back();
  response.set_id(id);
  response.set_last(true);
  response.mutable_status();
  v1::OpenResponse& open = *response.mutable_open();
  open.set_session_id(ticket_->id());
  open.set_backend_id(device.id);
  open.set_backend_version(device.version);
  SessionLimits granted = limits_;
  granted.chunk_size = chunk_size_.load();
  ToProto(granted, open.mutable_limits());
  open.set_client_handles(true);
  if (shared_ != nullptr) {
    v1::SharedMemoryOffer& offer = *open.mutable_shared_memory();
    offer.set_socket(shared_regions_->path());
    offer.set_token(shared_token_);
    offer.set_max_bytes(shared_regions_->max_bytes());
  }
  if (!resume_token_.empty()) {
    open.set_resume_token(resume_token_);
    open.set_resume_grace_ms(
        static_cast<uint64_t>(absl::ToInt64Milliseconds(resumer_->resume_grace())));
  }
}

void SessionProtocol::DoResume(uint64_t id, const v1::OpenRequest& request, Responses* out) {
  if (resumer_ == nullptr || resumer_->resume_grace() <= absl::ZeroDuration()) {
    open_refused_.store(true);
    return Reply(id,
                 absl::FailedPreconditionError(
                     "this daemon keeps no session beyond its stream (--resume_grace=0)"),
                 out);
  }
  absl::StatusOr<Resumer::Resumed> resumed = resumer_->Resume(request.resume_token(), Owner());
  if (!resumed.ok()) {
    open_refused_.store(true);
    return Reply(id, resumed.status(), out);
  }
  Carried& carried = *resumed->carried;
  ticket_ = std::move(carried.ticket);
  client_name_ = carried.client_name;
  chunk_size_.store(carried.chunk_size);
  resume_token_ = carried.resume_token;
  shared_ = std::move(carried.shared);
  shared_token_ = carried.shared_token;
  stats_ = carried.stats;
  started_ = carried.started;
  open_refused_.store(false);
  transfers_.store(&ticket_->transfers());
  session_.store(&ticket_->session());
  ticket_->Listen(listener_);
  LogLimited(LogKey(),
             absl::StrFormat("session %s resumed from %s after request %d", ticket_->id(), peer_,
                             resumed->last_completed),
             Fields());
  ReplyOpened(id, out);
  out->back().mutable_open()->set_resumed(true);
  out->back().mutable_open()->set_last_completed_id(resumed->last_completed);
}

void SessionProtocol::DoAllocate(uint64_t id, uint64_t bytes, uint64_t chosen,
                                 Responses* out) {
  if (absl::Status open = RequireOpen(); !open.ok()) return Reply(id, open, out);
  absl::StatusOr<uint64_t> handle = ticket_->session().Allocate(bytes, chosen);
  if (!handle.ok()) return Reply(id, handle.status(), out);
  ++stats_.allocations;
  Reply(id, absl::OkStatus(), out);
  out->back().mutable_allocate()->set_handle(*handle);
}

absl::StatusOr<absl::Span<uint8_t>> SessionProtocol::SharedSpanOf(const v1::SharedSpan& span,
                                                                   uint64_t expected,
                                                                   std::shared_ptr<SharedRegion>* region) {
  if (span.length() != expected) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the shared span holds %d bytes; the ranges hold %d", span.length(), expected));
  }
  *region = shared_ != nullptr ? shared_->region() : nullptr;
  if (*region == nullptr) {
    return absl::FailedPreconditionError(
        shared_ == nullptr ? "this session has no shared memory (ask for it at open, from a "
                             "daemon that listens on a Unix socket)"
                           : "no shared memory is attached to this session yet");
  }
  const absl::Span<uint8_t> bytes = (*region)->bytes();
  RETURN_IF_ERROR(SharedRegion::CheckSpan(bytes.size(), span.offset(), span.length()));
  return bytes.subspan(span.offset(), span.length());
}

void SessionProtocol::DoUpload(const PendingUpload& upload, Responses* out) {
  if (absl::Status open = RequireOpen(); !open.ok()) return Reply(upload.id, open, out);
  if (upload.shared.has_value()) {
    // The region stays mapped while this runs, even if its client attaches another meanwhile.
    std::shared_ptr<SharedRegion> region;
    absl::StatusOr<absl::Span<uint8_t>> data = SharedSpanOf(*upload.shared, upload.expected, &region);
    if (!data.ok()) return Reply(upload.id, data.status(), out);
    uint64_t at = 0;
    const absl::Status status = ticket_->session().Write(
        upload.ranges, [&](size_t, uint64_t, uint64_t length) -> absl::Span<const uint8_t> {
          const absl::Span<const uint8_t> piece = data->subspan(at, length);
          at += piece.size();
          return piece;
        });
    if (status.ok()) stats_.bytes_up += upload.expected;
    return Reply(upload.id, status, out);
  }
  // The ranges' bytes, concatenated, are the chunks': the session asks for them in order.
  size_t chunk = 0;
  uint64_t chunk_offset = 0;
  const absl::Status status = ticket_->session().Write(
      upload.ranges, [&](size_t, uint64_t, uint64_t length) -> absl::Span<const uint8_t> {
        if (chunk == upload.chunks.size()) return {};
        const std::string& c = upload.chunks[chunk];
        const uint64_t n = std::min<uint64_t>(length, c.size() - chunk_offset);
        const absl::Span<const uint8_t> piece(
            reinterpret_cast<const uint8_t*>(c.data()) + chunk_offset, n);
        chunk_offset += n;
        if (chunk_offset == c.size()) {
          ++chunk;
          chunk_offset = 0;
        }
        return piece;
      });
  if (status.ok()) stats_.bytes_up += upload.expected;
  Reply(upload.id, status, out);
}

absl::Status SessionProtocol::LandReads(uint64_t id, absl::Span<const RangeRef> reads,
                                        uint64_t base, uint64_t total,
                                        absl::FunctionRef<bool()> prepare,
                                        absl::FunctionRef<absl::Status(ReadSink)> run,
                                        Responses* out) {
  const uint64_t chunk = chunk_size_.load();
  std::vector<uint64_t> starts;  // where each read begins, from `base`
  starts.reserve(reads.size());
  uint64_t length = 0;
  for (const RangeRef& r : reads) {
    starts.push_back(length);
    length += r.length;
  }
  // The replies are made at the sink's first call, and the device copies straight into their
  // data: no staging copy.
  std::vector<std::string*> data;
  return run([&](size_t i, uint64_t offset, uint64_t piece) {
    if (piece == 0) return absl::Span<uint8_t>();
    if (data.empty()) {
      if (!prepare()) return absl::Span<uint8_t>();  // the session stops, running nothing
      const uint64_t count = (length + chunk - 1) / chunk;
      out->reserve(out->size() + count);
      for (uint64_t c = 0; c < count; ++c) {
        v1::SessionResponse& response = out->emplace_back();
        response.set_id(id);
        v1::DataChunk& chunk_data = *response.mutable_data();
        chunk_data.set_offset(base + c * chunk);
        chunk_data.set_total(total);
        chunk_data.mutable_data()->resize(std::min(chunk, length - c * chunk));
        data.push_back(chunk_data.mutable_data());
      }
    }
    const uint64_t at = starts[i] + offset;
    std::string& bytes = *data[at / chunk];
    const uint64_t within = at % chunk;
    return absl::Span<uint8_t>(reinterpret_cast<uint8_t*>(bytes.data()) + within,
                               std::min<uint64_t>(piece, bytes.size() - within));
  });
}

void SessionProtocol::ReadInto(uint64_t id, absl::Span<const RangeRef> reads,
                              absl::FunctionRef<absl::Status(ReadSink)> run, Responses* out) {
  // The sink only runs once the session has validated every read, so the total is real.
  const uint64_t total = TotalLength(reads);
  const uint64_t chunk = chunk_size_.load();
  // The replies' memory is reserved at the sink's first call, after validation (so a bad read
  // gets its own code) and before anything runs (so a refusal changes nothing); serializing
  // holds one chunk more. Small reads reserve nothing: polls of a few state words never fail
  // for want of memory that large transfers hold (the session's flow control bounds them).
  const size_t first = out->size();
  absl::Status refused;
  const absl::Status status = LandReads(
      id, reads, 0, total,
      [&] {
        if (total <= kCheapBytes) return true;
        absl::StatusOr<TransferBudget::Hold> hold =
            Transfers().Reserve(total + std::min(total, chunk), "a read");
        if (!hold.ok()) {
          refused = hold.status();
          return false;
        }
        read_hold_ = *std::move(hold);
        return true;
      },
      run, out);
  if (!status.ok()) {
    out->erase(out->begin() + static_cast<ptrdiff_t>(first), out->end());
    read_hold_.Release();
    return Reply(id, refused.ok() ? status : refused, out);
  }
  stats_.bytes_down += total;
  if (out->size() == first) {  // nothing to read: one empty chunk
    v1::SessionResponse& response = out->emplace_back();
    response.set_id(id);
    response.mutable_data()->set_total(0);
  }
  out->back().set_last(true);
  out->back().mutable_status();
}

std::vector<RangeRef> SessionProtocol::StreamedRead::Take(uint64_t length) {
  std::vector<RangeRef> pieces;
  while (length > 0 && read < reads.size()) {
    const RangeRef& r = reads[read];
    const uint64_t n = std::min(length, r.length - within);
    if (n > 0) pieces.push_back(RangeRef{r.handle, r.offset + within, n});
    length -= n;
    next += n;
    within += n;
    if (within == r.length) {
      ++read;
      within = 0;
    }
  }
  return pieces;
}

uint64_t SessionProtocol::StreamWindow() const {
  const uint64_t chunk = chunk_size_.load();
  return std::max<uint64_t>(1, kStreamWindow / chunk) * chunk;
}

void SessionProtocol::StartStreamedRead(uint64_t id, std::vector<RangeRef> reads, uint64_t total,
                                        Responses* out) {
  // All of it is checked first, so a bad read gets its own code and nothing is sent.
  if (absl::Status valid = ticket_->session().CheckReads(reads); !valid.ok()) {
    return Reply(id, valid, out);
  }
  const uint64_t window = StreamWindow();
  absl::StatusOr<TransferBudget::Hold> hold =
      Transfers().Reserve(std::min(total, 2 * window) + chunk_size_.load(), "a read");
  if (!hold.ok()) return Reply(id, hold.status(), out);
  StreamedRead read;
  read.id = id;
  read.reads = std::move(reads);
  read.total = total;
  read.window = window;
  read.hold = *std::move(hold);
  streamed_ = std::move(read);
  stats_.bytes_down += total;
  ContinueRead(out);
}

void SessionProtocol::ContinueRead(Responses* out) {
  StreamedRead& s = *streamed_;
  const uint64_t base = s.next;
  const std::vector<RangeRef> pieces = s.Take(std::min(s.window, s.total - s.next));
  const size_t first = out->size();
  const absl::Status status = LandReads(
      s.id, pieces, base, s.total, [] { return true; },
      [&](ReadSink sink) { return ticket_->session().Read(pieces, sink); }, out);
  if (!status.ok()) {
    // Checked when it began and nothing ran since, so only the device can fail it now.
    out->erase(out->begin() + static_cast<ptrdiff_t>(first), out->end());
    stats_.bytes_down -= s.total - base;
    ++stats_.errors;
    Reply(s.id, status, out);
  } else if (s.next < s.total) {
    return;
  } else {
    out->back().set_last(true);
    out->back().mutable_status();
  }
  read_hold_ = std::move(s.hold);
  streamed_.reset();
}

void SessionProtocol::DoRead(uint64_t id, const v1::ReadRequest& request, Responses* out) {
  if (absl::Status open = RequireOpen(); !open.ok()) return Reply(id, open, out);
  std::vector<RangeRef> reads = RangesFromProto(request.ranges());
  const uint64_t total = TotalLength(reads);
  if (request.has_shared()) {
    std::shared_ptr<SharedRegion> region;
    absl::StatusOr<absl::Span<uint8_t>> into = SharedSpanOf(request.shared(), total, &region);
    if (!into.ok()) return Reply(id, into.status(), out);
    std::vector<uint64_t> starts;  // where each read lands in the span
    uint64_t at = 0;
    for (const RangeRef& r : reads) {
      starts.push_back(at);
      at += r.length;
    }
    const absl::Status status =
        ticket_->session().Read(reads, [&](size_t i, uint64_t offset, uint64_t length) {
          return into->subspan(starts[i] + offset, length);
        });
    if (status.ok()) stats_.bytes_down += total;
    return Reply(id, status, out);
  }
  if (total > StreamWindow()) return StartStreamedRead(id, std::move(reads), total, out);
  ReadInto(
      id, reads, [&](ReadSink sink) { return ticket_->session().Read(reads, sink); }, out);
}

void SessionProtocol::DoFree(uint64_t id, uint64_t handle, Responses* out) {
  if (absl::Status open = RequireOpen(); !open.ok()) return Reply(id, open, out);
  const absl::Status status = ticket_->session().Free(handle);
  if (status.ok()) ++stats_.frees;
  Reply(id, status, out);
}

void SessionProtocol::DoExecute(uint64_t id, const v1::ExecuteRequest& request,
                                const std::atomic<bool>* cancelled, Responses* out) {
  if (absl::Status open = RequireOpen(); !open.ok()) return Reply(id, open, out);
  const Interrupt interrupt(&cancel_, cancelled,
                            limits_.max_request_seconds == 0
                                ? absl::InfiniteFuture()
                                : absl::Now() + absl::Seconds(limits_.max_request_seconds));
  const std::vector<StepRef> prefix = StepsFromProto(request.prefix());
  const std::vector<StepRef> repeated = StepsFromProto(request.repeated());
  const std::vector<RangeRef> reads = RangesFromProto(request.reads());
  bool ran = false;
  ReadInto(
      id, reads,
      [&](ReadSink sink) {
        absl::Status status = ticket_->session().Execute(prefix, repeated, request.repeat_count(),
                                                         reads, sink, interrupt);
        ran = status.ok();
        return status;
      },
      out);
  if (ran) {
    const uint64_t steps = prefix.size() + uint64_t{request.repeat_count()} * repeated.size();
    ++stats_.executes;
    stats_.steps += steps;
    if (metrics_ != nullptr) metrics_->Executed(steps, request.repeat_count());
  }
}

void SessionProtocol::DoPing(uint64_t id, v1::PingRequest& request, Responses* out) {
  if (request.payload().size() > kMaxPingPayload) {
    return Reply(id,
                 absl::InvalidArgumentError(absl::StrFormat(
                     "a ping payload holds at most %d bytes", kMaxPingPayload)),
                 out);
  }
  Reply(id, absl::OkStatus(), out);
  out->back().mutable_ping()->set_payload(std::move(*request.mutable_payload()));
}

}  // namespace sluice
