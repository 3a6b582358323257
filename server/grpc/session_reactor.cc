#include "server/grpc/session_reactor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/log.h"
#include "proto/codec.h"

namespace sluice {
namespace {

// Reading pauses while this many requests, or uploads holding this many bytes, wait to run, or
// this many reply bytes wait to be sent, so a client that floods requests or never reads
// replies cannot grow daemon memory. (What one request may hold is bounded by
// max_request_bytes, and what all sessions hold by the daemon's TransferBudget.)
constexpr size_t kMaxQueuedJobs = 16;
constexpr uint64_t kMaxStagedBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxPendingWriteBytes = uint64_t{64} << 20;
// Requests moving at most this many bytes, with no kernel steps, may run inline on the gRPC
// thread when the session has nothing else queued: copying a few bytes is no device wait.
// Transfers this small need no share of the daemon's transfer budget either.
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

}  // namespace

SessionReactor::SessionReactor(SessionManager* manager, Executor* executor, std::string peer)
    : manager_(manager),
      executor_(executor),
      peer_(std::move(peer)),
      limits_(manager->options().limits),
      started_(absl::Now()),
      chunk_size_(manager->options().max_chunk_size) {
  {
    absl::MutexLock lock(&mu_);
    reading_ = true;
  }
  StartRead(&read_buffer_);
}

// ---- gRPC reactions -------------------------------------------------------------------------

void SessionReactor::OnReadDone(bool ok) {
  bool malformed = false;
  if (ok) {
    malformed = !grpc::SerializationTraits<v1::SessionRequest>::Deserialize(&read_buffer_,
                                                                          &request_)
                     .ok();
    if (!malformed) Accept(request_);
  }
  if (!ok && upload_.has_value()) {
    FlushUpload(absl::InvalidArgumentError(absl::StrFormat(
        "upload %d: the stream ended before its last chunk", upload_->id)));
  }
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    reading_ = false;
    if (!ok) read_closed_ = true;
    if (malformed) {
      malformed_ = true;
      cancel_.store(true);
    }
    ContinueLocked(&actions);
  }
  Perform(actions);
}

void SessionReactor::OnWriteDone(bool ok) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    write_bytes_ -= writes_.front().buffer.Length();
    writes_.pop_front();  // and with it any transfer memory it held
    if (!ok) {
      // The client is gone; nothing more can be delivered.
      write_failed_ = true;
      cancel_.store(true);
    }
    ContinueLocked(&actions);
  }
  Perform(actions);
}

void SessionReactor::OnCancel() {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    cancel_.store(true);
    ContinueLocked(&actions);
  }
  Perform(actions);
}

void SessionReactor::OnDone() {
  if (ticket_ != nullptr) {
    const char* why = "client closed the stream";
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) why = "cancelled";
      else if (write_failed_) why = "connection lost";
      else if (malformed_) why = "malformed message";
    }
    Log("session %s closed (%s) after %.3fs: %d requests (%d failed), %d allocations, "
        "%d frees, %d executes (%d kernel steps), %d bytes up, %d bytes down; "
        "%d buffers (%d bytes) freed at close",
        ticket_->id(), why, absl::ToDoubleSeconds(absl::Now() - started_), stats_.requests,
        stats_.errors, stats_.allocations, stats_.frees, stats_.executes, stats_.steps,
        stats_.bytes_up, stats_.bytes_down, ticket_->session().buffer_count(),
        ticket_->session().bytes_in_use());
  }
  // Freeing the session's buffers may wait for the device (cudaFree does): not on a gRPC
  // thread. The executor outlives every reactor and runs what is queued before it goes.
  if (ticket_ != nullptr) {
    executor_->Schedule([ticket = std::move(ticket_)]() mutable { ticket.reset(); });
  }
  delete this;
}

// ---- Flow -----------------------------------------------------------------------------------

void SessionReactor::ContinueLocked(Actions* actions) {
  const bool aborted = cancelled_ || write_failed_ || malformed_;
  if (aborted) {
    jobs_.clear();
    staged_bytes_ = 0;
    // The write in flight (front) completes on its own; the rest can never be delivered.
    while (writes_.size() > (writing_ ? 1u : 0u)) {
      write_bytes_ -= writes_.back().buffer.Length();
      writes_.pop_back();
    }
  }
  if (!writing_ && !writes_.empty() && !aborted) {
    writing_ = true;
    actions->write = &writes_.front().buffer;
  }
  // Replies waiting to be sent bound the next job too: a client that does not read its replies
  // stops the session's work, not just its reading.
  if (!job_running_ && !jobs_.empty() && write_bytes_ < kMaxPendingWriteBytes) {
    job_running_ = true;
    actions->schedule = true;
  }
  if (!reading_ && !read_closed_ && !aborted && !finished_ && jobs_.size() < kMaxQueuedJobs &&
      staged_bytes_ < kMaxStagedBytes && write_bytes_ < kMaxPendingWriteBytes) {
    reading_ = true;
    actions->start_read = true;
  }
  if (!finished_ && (read_closed_ || aborted) && !reading_ && !job_running_ && jobs_.empty() &&
      !writing_ && writes_.empty()) {
    finished_ = true;
    actions->finish = true;
    actions->finish_status =
        cancelled_    ? grpc::Status(grpc::StatusCode::CANCELLED, "session cancelled")
        : malformed_ ? grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                    "a message on the stream is not a sluice.v1.SessionRequest")
                     : grpc::Status::OK;
  }
}

void SessionReactor::Perform(const Actions& actions) {
  if (actions.write != nullptr) StartWrite(actions.write);
  if (actions.schedule) executor_->Schedule([this] { RunNextJob(); });
  if (actions.start_read) StartRead(&read_buffer_);
  if (actions.finish) Finish(actions.finish_status);
}

void SessionReactor::Enqueue(Job job) {
  Actions actions;
  bool run_inline = false;
  {
    absl::MutexLock lock(&mu_);
    run_inline = job.cheap && !job_running_ && jobs_.empty() && !cancelled_ && !write_failed_ &&
                 write_bytes_ < kMaxPendingWriteBytes;
    if (run_inline) {
      job_running_ = true;
    } else {
      staged_bytes_ += job.staged;
      jobs_.push_back(std::move(job));
      ContinueLocked(&actions);
    }
  }
  if (run_inline) {
    RunJob(job);
    absl::MutexLock lock(&mu_);
    job_running_ = false;
    ContinueLocked(&actions);
  }
  Perform(actions);
}

void SessionReactor::RunNextJob() {
  std::optional<Job> job;
  {
    absl::MutexLock lock(&mu_);
    // The queue is empty only if it was dropped (cancellation) after this run was scheduled.
    if (!jobs_.empty()) {
      job = std::move(jobs_.front());
      jobs_.pop_front();
      staged_bytes_ -= job->staged;
    }
  }
  if (job.has_value()) RunJob(*job);
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    job_running_ = false;
    ContinueLocked(&actions);
  }
  Perform(actions);
}

void SessionReactor::RunJob(Job& job) {
  Responses out;
  std::move(job.run)(&out);
  job.run = nullptr;  // an upload's data goes now, with its reservation
  ++stats_.requests;
  if (!out.empty() && out.back().status().code() != 0) ++stats_.errors;
  std::vector<grpc::ByteBuffer> serialized(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    bool own = false;
    grpc::SerializationTraits<v1::SessionResponse>::Serialize(out[i], &serialized[i], &own);
    v1::SessionResponse().Swap(&out[i]);  // release each reply's bytes once serialized
  }
  // A read's replies are serialized now (the protos are released); its reservation stays with
  // the last of them until it has been sent.
  TransferBudget::Hold hold = std::move(read_hold_);
  uint64_t bytes = 0;
  for (const grpc::ByteBuffer& buffer : serialized) bytes += buffer.Length();
  hold.Shrink(bytes);
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < serialized.size(); ++i) {
    write_bytes_ += serialized[i].Length();
    writes_.push_back(PendingWrite{std::move(serialized[i]),
                                   i + 1 == serialized.size() ? std::move(hold)
                                                              : TransferBudget::Hold()});
  }
}

// ---- Request assembly (read path) ------------------------------------------------------------

void SessionReactor::Accept(v1::SessionRequest& request) {
  if (upload_.has_value() &&
      !(request.op_case() == v1::SessionRequest::kUpload && request.id() == upload_->id)) {
    FlushUpload(absl::InvalidArgumentError(absl::StrFormat(
        "upload %d was interrupted by request %d before its last chunk", upload_->id,
        request.id())));
  }
  if (request.op_case() == v1::SessionRequest::kUpload) {
    AcceptUpload(request);
    return;
  }
  Enqueue(MakeJob(request));
}

void SessionReactor::AcceptUpload(v1::SessionRequest& request) {
  v1::UploadRequest& chunk = *request.mutable_upload();
  if (!upload_.has_value()) {
    upload_ = PendingUpload{.id = request.id()};
    PendingUpload& up = *upload_;
    if (!open_seen_ || open_refused_.load()) {
      // Checked here, not only when the job runs, so that no data is held for it.
      up.error = NotOpenError();
    } else if (static_cast<uint64_t>(chunk.ranges_size()) > limits_.max_ranges) {
      up.error = absl::InvalidArgumentError(absl::StrFormat(
          "%d ranges in one upload; the limit is %d", chunk.ranges_size(), limits_.max_ranges));
    } else {
      up.ranges = RangesFromProto(chunk.ranges());
      up.expected = TotalLength(up.ranges);
      if (up.expected > limits_.max_request_bytes) {
        up.error = absl::ResourceExhaustedError(
            absl::StrFormat("an upload of %d bytes exceeds the per-request limit of %d bytes",
                            up.expected, limits_.max_request_bytes));
      } else if (up.expected > kCheapBytes) {
        // The data is reserved as it arrives: a client that declares a large upload and
        // stalls holds only what it sent.
        absl::StatusOr<TransferBudget::Hold> hold = manager_->transfers().Reserve(0, "an upload");
        if (hold.ok()) up.hold = *std::move(hold);
      }
    }
  } else if (chunk.ranges_size() > 0) {
    upload_->error = absl::InvalidArgumentError(
        "ranges may only appear in the first message of an upload");
  }
  PendingUpload& up = *upload_;
  const uint64_t n = chunk.data().size();
  const uint32_t chunk_limit = chunk_size_.load();
  if (up.error.ok()) {
    if (n > chunk_limit) {
      up.error = absl::InvalidArgumentError(absl::StrFormat(
          "a chunk of %d bytes exceeds the negotiated chunk size of %d bytes", n, chunk_limit));
    } else if (n > up.expected - up.received) {
      up.error = absl::InvalidArgumentError(absl::StrFormat(
          "upload data exceeds the %d bytes its ranges describe", up.expected));
    } else if (n > 0) {
      absl::Status held =
          up.expected > kCheapBytes ? up.hold.Extend(n, "an upload") : absl::OkStatus();
      if (held.ok()) {
        up.received += n;
        up.chunks.push_back(std::move(*chunk.mutable_data()));
      } else {
        up.error = std::move(held);
      }
    }
  }
  if (!up.error.ok()) {  // keep nothing that cannot be used
    up.chunks.clear();
    up.hold.Release();
  }
  if (chunk.last()) FlushUpload(absl::OkStatus());
}

void SessionReactor::FlushUpload(absl::Status interrupted) {
  PendingUpload up = std::move(*upload_);
  upload_.reset();
  if (up.error.ok() && !interrupted.ok()) {
    up.error = std::move(interrupted);
    up.chunks.clear();  // nothing of it will be written
    up.hold.Release();
  } else if (up.error.ok() && up.received != up.expected) {
    up.error = absl::InvalidArgumentError(absl::StrFormat(
        "upload ended after %d of the %d bytes its ranges describe", up.received, up.expected));
    up.chunks.clear();
    up.hold.Release();
  }
  Job job;
  job.id = up.id;
  job.cheap = up.error.ok() && up.expected <= kCheapBytes;
  job.staged = up.error.ok() ? up.received : 0;
  job.run = [this, up = std::move(up)](Responses* out) { DoUpload(up.id, up, out); };
  Enqueue(std::move(job));
}

SessionReactor::Job SessionReactor::MakeJob(v1::SessionRequest& request) {
  Job job;
  const uint64_t id = request.id();
  job.id = id;
  switch (request.op_case()) {
    case v1::SessionRequest::kOpen:
      // Chunks of requests pipelined behind the open are checked against the negotiated size.
      if (!open_seen_) {
        open_seen_ = true;
        chunk_size_.store(manager_->options().NegotiateChunkSize(request.open().chunk_size()));
      }
      job.run = [this, id, open = std::move(*request.mutable_open())](Responses* out) {
        DoOpen(id, open, out);
      };
      break;
    case v1::SessionRequest::kAllocate:
      job.run = [this, id, bytes = request.allocate().bytes()](Responses* out) {
        DoAllocate(id, bytes, out);
      };
      break;
    case v1::SessionRequest::kRead: {
      job.cheap = TotalLength(RangesFromProto(request.read().ranges())) <= kCheapBytes &&
                  static_cast<uint64_t>(request.read().ranges_size()) <= limits_.max_ranges;
      job.run = [this, id, read = std::move(*request.mutable_read())](Responses* out) {
        DoRead(id, read, out);
      };
      break;
    }
    case v1::SessionRequest::kFree:
      // Not cheap: a device's free may wait for the device (cudaFree does).
      job.run = [this, id, handle = request.free().handle()](Responses* out) {
        DoFree(id, handle, out);
      };
      break;
    case v1::SessionRequest::kExecute:
      job.run = [this, id, execute = std::move(*request.mutable_execute())](Responses* out) {
        DoExecute(id, execute, out);
      };
      break;
    case v1::SessionRequest::kPing:
      job.cheap = true;
      job.run = [this, id, ping = std::move(*request.mutable_ping())](Responses* out) mutable {
        DoPing(id, ping, out);
      };
      break;
    case v1::SessionRequest::kUpload:  // assembled by AcceptUpload
    case v1::SessionRequest::OP_NOT_SET:
      job.cheap = true;
      job.run = [this, id](Responses* out) {
        Reply(id, absl::InvalidArgumentError("the request carries no operation"), out);
      };
      break;
  }
  return job;
}

// ---- Job bodies -----------------------------------------------------------------------------

void SessionReactor::Reply(uint64_t id, const absl::Status& status, Responses* out) {
  v1::SessionResponse& response = out->emplace_back();
  response.set_id(id);
  response.set_last(true);
  ToProto(status, response.mutable_status());
}

absl::Status SessionReactor::NotOpenError() {
  return absl::FailedPreconditionError(
      "the session is not open: the first request of a stream must be open");
}

absl::Status SessionReactor::RequireOpen() const {
  if (ticket_ != nullptr) return absl::OkStatus();
  return NotOpenError();
}

void SessionReactor::DoOpen(uint64_t id, const v1::OpenRequest& request, Responses* out) {
  if (ticket_ != nullptr) {
    Reply(id, absl::FailedPreconditionError("the session is already open"), out);
    return;
  }
  absl::StatusOr<std::unique_ptr<SessionManager::Ticket>> ticket = manager_->Open();
  if (!ticket.ok()) {
    open_refused_.store(true);  // uploads that follow are refused as they arrive
    Reply(id, ticket.status(), out);
    return;
  }
  open_refused_.store(false);
  ticket_ = std::move(*ticket);
  client_name_ = Printable(request.client_name());
  const DeviceInfo& device = manager_->device().info();
  Log("session %s opened by \"%s\" from %s on %s; chunk %d bytes", ticket_->id(), client_name_,
      peer_, device.id, chunk_size_.load());

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
}

void SessionReactor::DoAllocate(uint64_t id, uint64_t bytes, Responses* out) {
  if (absl::Status open = RequireOpen(); !open.ok()) return Reply(id, open, out);
  absl::StatusOr<uint64_t> handle = ticket_->session().Allocate(bytes);
  if (!handle.ok()) return Reply(id, handle.status(), out);
  ++stats_.allocations;
  Reply(id, absl::OkStatus(), out);
  out->back().mutable_allocate()->set_handle(*handle);
}

void SessionReactor::DoUpload(uint64_t id, const PendingUpload& upload, Responses* out) {
  if (!upload.error.ok()) return Reply(id, upload.error, out);
  if (absl::Status open = RequireOpen(); !open.ok()) return Reply(id, open, out);
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
  Reply(id, status, out);
}

void SessionReactor::ReadInto(uint64_t id, absl::Span<const RangeRef> reads,
                              absl::FunctionRef<absl::Status(ReadSink)> run, Responses* out) {
  // The sink only runs once the session has validated every read, so the total is real.
  const uint64_t total = TotalLength(reads);
  const uint64_t chunk = chunk_size_.load();
  std::vector<uint64_t> starts;  // where each read begins in the concatenation
  starts.reserve(reads.size());
  uint64_t position = 0;
  for (const RangeRef& r : reads) {
    starts.push_back(position);
    position += r.length;
  }
  // The replies are made at the sink's first call, and the device copies straight into their
  // data: no staging copy. Their memory is reserved then, after validation (so a bad read gets
  // its own code) and before anything runs (so a refusal changes nothing); serializing holds
  // one chunk more. Small reads reserve nothing: polls of a few state words never fail for
  // want of memory that large transfers hold (the session's flow control bounds them).
  const size_t first = out->size();
  std::vector<std::string*> data;
  absl::Status refused;
  const absl::Status status = run([&](size_t i, uint64_t offset, uint64_t length) {
    if (length == 0) return absl::Span<uint8_t>();
    if (data.empty()) {
      if (total > kCheapBytes) {
        absl::StatusOr<TransferBudget::Hold> hold =
            manager_->transfers().Reserve(total + std::min(total, chunk), "a read");
        if (!hold.ok()) {
          refused = hold.status();
          return absl::Span<uint8_t>();  // the session stops, running nothing
        }
        read_hold_ = *std::move(hold);
      }
      const uint64_t count = (total + chunk - 1) / chunk;
      out->reserve(first + count);
      for (uint64_t c = 0; c < count; ++c) {
        v1::SessionResponse& response = out->emplace_back();
        response.set_id(id);
        v1::DataChunk& chunk_data = *response.mutable_data();
        chunk_data.set_offset(c * chunk);
        chunk_data.set_total(total);
        chunk_data.mutable_data()->resize(std::min(chunk, total - c * chunk));
        data.push_back(chunk_data.mutable_data());
      }
    }
    const uint64_t at = starts[i] + offset;
    std::string& bytes = *data[at / chunk];
    const uint64_t within = at % chunk;
    return absl::Span<uint8_t>(reinterpret_cast<uint8_t*>(bytes.data()) + within,
                               std::min<uint64_t>(length, bytes.size() - within));
  });
  if (!status.ok()) {
    out->erase(out->begin() + static_cast<ptrdiff_t>(first), out->end());
    read_hold_.Release();
    return Reply(id, refused.ok() ? status : refused, out);
  }
  stats_.bytes_down += total;
  if (data.empty()) {  // nothing to read: one empty chunk
    v1::SessionResponse& response = out->emplace_back();
    response.set_id(id);
    response.mutable_data()->set_total(0);
  }
  out->back().set_last(true);
  out->back().mutable_status();
}

void SessionReactor::DoRead(uint64_t id, const v1::ReadRequest& request, Responses* out) {
  if (absl::Status open = RequireOpen(); !open.ok()) return Reply(id, open, out);
  const std::vector<RangeRef> reads = RangesFromProto(request.ranges());
  ReadInto(
      id, reads, [&](ReadSink sink) { return ticket_->session().Read(reads, sink); }, out);
}

void SessionReactor::DoFree(uint64_t id, uint64_t handle, Responses* out) {
  if (absl::Status open = RequireOpen(); !open.ok()) return Reply(id, open, out);
  const absl::Status status = ticket_->session().Free(handle);
  if (status.ok()) ++stats_.frees;
  Reply(id, status, out);
}

void SessionReactor::DoExecute(uint64_t id, const v1::ExecuteRequest& request, Responses* out) {
  if (absl::Status open = RequireOpen(); !open.ok()) return Reply(id, open, out);
  const std::vector<StepRef> prefix = StepsFromProto(request.prefix());
  const std::vector<StepRef> repeated = StepsFromProto(request.repeated());
  const std::vector<RangeRef> reads = RangesFromProto(request.reads());
  bool ran = false;
  ReadInto(
      id, reads,
      [&](ReadSink sink) {
        absl::Status status = ticket_->session().Execute(prefix, repeated, request.repeat_count(),
                                                         reads, sink, &cancel_);
        ran = status.ok();
        return status;
      },
      out);
  if (ran) {
    ++stats_.executes;
    stats_.steps += prefix.size() + uint64_t{request.repeat_count()} * repeated.size();
  }
}

void SessionReactor::DoPing(uint64_t id, v1::PingRequest& request, Responses* out) {
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
