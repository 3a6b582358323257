#include "client/remote_dispatch.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "proto/codec.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {
namespace {

std::chrono::system_clock::time_point ToChrono(absl::Time t) {
  return std::chrono::system_clock::from_time_t(0) +
         std::chrono::microseconds(absl::ToUnixMicros(t));
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& target) {
  grpc::ChannelArguments args;
  // Notice a dead daemon or a dropped connection within seconds even while a long call runs.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Replies are at most one chunk plus a little framing.
  args.SetMaxReceiveMessageSize(kMaxChunkSize + (1 << 20));
  // A connection per session: one job's transfer never queues behind another's.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

// Sum of lengths, saturating, so absurd requests cannot wrap to small ones.
uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return b > ~uint64_t{0} - a ? ~uint64_t{0} : a + b; }

}  // namespace

// One logical request, turned into messages as the stream is ready for them. Upload data is
// copied from the caller's memory chunk by chunk (under the stream lock), never all at once.
struct Outgoing {
  uint64_t call_id = 0;     // the request id, set when it is queued
  v1::SessionRequest head;  // the whole request, or an upload's first message (its ranges)
  bool is_upload = false;
  std::vector<absl::Span<const uint8_t>> data;  // upload payload, concatenated in order
  size_t piece = 0;
  size_t piece_offset = 0;
  uint64_t remaining = 0;
  bool head_sent = false;
  uint64_t id = 0;  // kept apart: `head` is swapped out with the first message

  // Fills `msg` with the next message; true when it is the request's last.
  bool Next(v1::SessionRequest* msg, uint32_t chunk) {
    if (!is_upload) {
      msg->Swap(&head);
      return true;
    }
    if (!head_sent) {
      id = head.id();
      msg->Swap(&head);
      head_sent = true;
    } else {
      msg->Clear();
      msg->set_id(id);
    }
    v1::UploadRequest& upload = *msg->mutable_upload();
    std::string& out = *upload.mutable_data();
    out.clear();
    uint64_t take = std::min<uint64_t>(chunk, remaining);
    out.reserve(take);
    while (take > 0) {
      const absl::Span<const uint8_t> p = data[piece];
      const size_t n = std::min<uint64_t>(take, p.size() - piece_offset);
      out.append(reinterpret_cast<const char*>(p.data()) + piece_offset, n);
      take -= n;
      remaining -= n;
      piece_offset += n;
      if (piece_offset == p.size()) {
        ++piece;
        piece_offset = 0;
      }
    }
    upload.set_last(remaining == 0);
    return remaining == 0;
  }
};

// A request waiting for its reply. Read bytes land directly in `outputs`.
struct RemoteDispatch::Call {
  std::vector<std::vector<uint8_t>*> outputs;
  std::vector<uint64_t> lengths;
  uint64_t expected = 0;
  // Filled by the stream.
  uint64_t id = 0;
  uint64_t received = 0;
  size_t cursor = 0;
  uint64_t cursor_offset = 0;
  bool sized = false;
  bool done = false;
  // Nobody waits for it (a free): the stream owns it, and a failure breaks the session.
  bool detached = false;
  absl::Status status;
  v1::SessionResponse reply;  // the final response
};

class RemoteDispatch::Stream final
    : public grpc::ClientBidiReactor<v1::SessionRequest, v1::SessionResponse> {
 public:
  explicit Stream(std::shared_ptr<grpc::Channel> channel)
      : channel_(std::move(channel)), stub_(v1::Sluice::NewStub(channel_)) {}

  void Start() {
    stub_->async()->Session(&context_, this);
    // Writes start from caller threads at any time; the hold keeps OnDone from running until
    // no write can start any more.
    AddHold();
    StartRead(&read_msg_);
    StartCall();
  }

  void set_chunk_size(uint32_t chunk) {
    absl::MutexLock lock(&mu_);
    chunk_size_ = chunk;
  }

  Counters counters() const {
    absl::MutexLock lock(&mu_);
    return counters_;
  }

  // Sends `out` and waits until its final reply arrives, the stream breaks, or `deadline`.
  absl::Status Send(Outgoing out, Call* call, absl::Time deadline) {
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      if (!broken_.ok()) return broken_;
      call->id = next_id_++;
      out.call_id = call->id;
      out.head.set_id(call->id);
      calls_.push_back(call);
      outgoing_.push_back(std::move(out));
      AdvanceLocked(&actions);
    }
    Apply(actions);
    absl::Status result;
    bool timed_out = false;
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithDeadline(absl::Condition(&call->done), deadline)) {
        ++counters_.round_trips;
        return call->status;
      }
      timed_out = true;
      calls_.erase(std::remove(calls_.begin(), calls_.end(), call), calls_.end());
      // This call timed out; every other call, now or later, finds the session gone.
      const bool first = broken_.ok();
      BreakLocked(absl::UnavailableError(
          "the session was closed after a call got no reply from sluiced before its deadline"));
      result = first ? absl::DeadlineExceededError(
                           "no reply from sluiced before the call deadline; the session is closed")
                     : broken_;
      AdvanceLocked(&actions);
    }
    Apply(actions);
    if (timed_out) context_.TryCancel();
    return result;
  }

  // Sends `out` without waiting for its reply, which is checked when it arrives: a failure
  // then closes the session (every later call reports it). For requests whose failure the
  // caller has ruled out (a free of a buffer it holds), so they cost no round trip.
  absl::Status SendDetached(Outgoing out) {
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      if (!broken_.ok()) return broken_;
      while (!detached_.empty() && detached_.front()->done) detached_.pop_front();
      auto call = std::make_unique<Call>();
      call->detached = true;
      call->id = next_id_++;
      out.call_id = call->id;
      out.head.set_id(call->id);
      calls_.push_back(call.get());
      detached_.push_back(std::move(call));
      outgoing_.push_back(std::move(out));
      AdvanceLocked(&actions);
    }
    Apply(actions);
    return absl::OkStatus();
  }

  // Half-closes the stream and waits for the daemon to end it; cancels after `grace`.
  void Close(absl::Duration grace) {
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      closing_ = true;
      AdvanceLocked(&actions);
    }
    Apply(actions);
    bool finished = false;
    {
      absl::MutexLock lock(&mu_);
      finished = mu_.AwaitWithDeadline(absl::Condition(&done_), absl::Now() + grace);
    }
    if (!finished) context_.TryCancel();
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));  // OnDone always comes once the call is cancelled
  }

 private:
  struct Actions {
    bool write = false;
    bool writes_done = false;
    bool release_hold = false;
  };

  void OnWriteDone(bool ok) override {
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) BreakLocked(absl::UnavailableError("lost the connection to sluiced while sending"));
      AdvanceLocked(&actions);
    }
    Apply(actions);
  }

  void OnWritesDoneDone(bool) override {
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      writes_done_complete_ = true;
      AdvanceLocked(&actions);
    }
    Apply(actions);
  }

  void OnReadDone(bool ok) override {
    Actions actions;
    bool keep_reading = false;
    {
      absl::MutexLock lock(&mu_);
      if (!ok) {
        BreakLocked(absl::UnavailableError(
            closing_ ? "the session is closed" : "sluiced ended the session stream"));
      } else {
        ++counters_.messages_received;
        counters_.bytes_received += read_msg_.ByteSizeLong();
        absl::Status delivered = DeliverLocked();
        if (delivered.ok()) {
          keep_reading = true;
        } else {
          BreakLocked(delivered);
        }
      }
      AdvanceLocked(&actions);
    }
    Apply(actions);
    if (keep_reading) {
      StartRead(&read_msg_);
    } else if (ok) {
      context_.TryCancel();  // a reply broke the protocol: end the session
    }
  }

  void OnDone(const grpc::Status& status) override {
    absl::MutexLock lock(&mu_);
    if (broken_.ok()) {
      broken_ = absl::UnavailableError(
          absl::StrFormat("the session ended: %s", status.error_message()));
    }
    done_ = true;
  }

  // Routes the reply in read_msg_ to the oldest waiting call.
  absl::Status DeliverLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    v1::SessionResponse& r = read_msg_;
    if (calls_.empty() || calls_.front()->id != r.id()) {
      return absl::InternalError(absl::StrFormat(
          "sluiced replied to request %d, but %s", r.id(),
          calls_.empty() ? "none is waiting"
                         : absl::StrFormat("request %d is next", calls_.front()->id)));
    }
    Call* call = calls_.front();
    if (r.has_data()) {
      const v1::DataChunk& chunk = r.data();
      const std::string& bytes = chunk.data();
      if (chunk.total() != call->expected || chunk.offset() != call->received ||
          bytes.size() > call->expected - call->received) {
        return absl::DataLossError(absl::StrFormat(
            "reply data (offset %d, %d bytes, total %d) does not match the %d bytes requested",
            chunk.offset(), bytes.size(), chunk.total(), call->expected));
      }
      if (!call->sized) {
        for (size_t i = 0; i < call->outputs.size(); ++i) call->outputs[i]->resize(call->lengths[i]);
        call->sized = true;
      }
      const char* src = bytes.data();
      size_t left = bytes.size();
      while (left > 0) {
        while (call->cursor_offset == call->lengths[call->cursor]) {
          ++call->cursor;
          call->cursor_offset = 0;
        }
        const size_t n = std::min<uint64_t>(left, call->lengths[call->cursor] - call->cursor_offset);
        std::memcpy(call->outputs[call->cursor]->data() + call->cursor_offset, src, n);
        src += n;
        left -= n;
        call->cursor_offset += n;
      }
      call->received += bytes.size();
    }
    if (!r.last()) return absl::OkStatus();
    // A final reply before the whole request went out is a protocol violation, and the rest of
    // it must never be read from the caller's memory once the caller has returned.
    if (!outgoing_.empty() && outgoing_.front().call_id <= call->id) {
      return absl::InternalError(absl::StrFormat(
          "sluiced answered request %d before it was sent in full", call->id));
    }
    call->status = StatusFromProto(r.status());
    if (call->status.ok()) {
      if (call->received != call->expected) {
        return absl::DataLossError(absl::StrFormat(
            "sluiced returned %d of the %d bytes requested", call->received, call->expected));
      }
      if (!call->sized) {
        for (size_t i = 0; i < call->outputs.size(); ++i) call->outputs[i]->clear();
      }
    }
    call->reply = std::move(r);
    call->done = true;
    calls_.pop_front();
    if (call->detached && !call->status.ok()) {
      return absl::UnavailableError(absl::StrFormat(
          "the session is closed: sluiced refused request %d, sent without waiting: %s", call->id,
          call->status.ToString()));
    }
    return absl::OkStatus();
  }

  // Marks the stream unusable: every waiting call completes with `status`.
  void BreakLocked(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (broken_.ok()) broken_ = std::move(status);
    outgoing_.clear();
    for (Call* call : calls_) {
      call->status = broken_;
      call->done = true;
    }
    calls_.clear();
  }

  // Decides the next gRPC operations; they are started by Apply, outside the lock.
  void AdvanceLocked(Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!writing_ && broken_.ok() && !writes_done_) {
      if (!outgoing_.empty()) {
        if (outgoing_.front().Next(&write_msg_, chunk_size_)) outgoing_.pop_front();
        ++counters_.messages_sent;
        counters_.bytes_sent += write_msg_.ByteSizeLong();
        writing_ = true;
        actions->write = true;
      } else if (closing_) {
        writes_done_ = true;
        writing_ = true;
        actions->writes_done = true;
      }
    }
    if (!hold_released_ && !writing_ && (!broken_.ok() || writes_done_complete_)) {
      hold_released_ = true;
      actions->release_hold = true;
    }
  }

  void Apply(const Actions& actions) {
    if (actions.write) StartWrite(&write_msg_);
    if (actions.writes_done) StartWritesDone();
    if (actions.release_hold) RemoveHold();
  }

  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<v1::Sluice::Stub> stub_;
  grpc::ClientContext context_;
  v1::SessionRequest write_msg_;  // owned by the write in flight
  v1::SessionResponse read_msg_;  // owned by the read in flight

  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint32_t chunk_size_ ABSL_GUARDED_BY(mu_) = 1 << 20;
  std::deque<Outgoing> outgoing_ ABSL_GUARDED_BY(mu_);
  std::deque<Call*> calls_ ABSL_GUARDED_BY(mu_);
  std::deque<std::unique_ptr<Call>> detached_ ABSL_GUARDED_BY(mu_);  // sent without a waiter
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_done_complete_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);  // OK while the stream is healthy
  Counters counters_ ABSL_GUARDED_BY(mu_);
};

// ---- RemoteDispatch ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<RemoteDispatch>> RemoteDispatch::Connect(const Options& options) {
  if (options.target.empty()) return absl::InvalidArgumentError("no daemon address given");
  std::shared_ptr<grpc::Channel> channel = MakeChannel(options.target);
  if (!channel->WaitForConnected(ToChrono(absl::Now() + options.connect_timeout))) {
    return absl::UnavailableError(absl::StrFormat("cannot reach sluiced at %s within %s",
                                                  options.target,
                                                  absl::FormatDuration(options.connect_timeout)));
  }
  auto stream = std::make_unique<Stream>(std::move(channel));
  stream->Start();
  std::unique_ptr<RemoteDispatch> dispatch(new RemoteDispatch(std::move(stream), options));

  Outgoing out;
  v1::OpenRequest& open = *out.head.mutable_open();
  open.set_client_name(options.client_name);
  open.set_chunk_size(options.chunk_size);
  Call call;
  RETURN_IF_ERROR(
      dispatch->stream_->Send(std::move(out), &call, absl::Now() + options.connect_timeout));
  const v1::OpenResponse& opened = call.reply.open();
  dispatch->session_id_ = opened.session_id();
  dispatch->backend_id_ = opened.backend_id();
  dispatch->backend_version_ = opened.backend_version();
  ASSIGN_OR_RETURN(dispatch->limits_, GrantedLimitsFromProto(opened.limits()));
  dispatch->stream_->set_chunk_size(dispatch->limits_.chunk_size);
  return dispatch;
}

RemoteDispatch::RemoteDispatch(std::unique_ptr<Stream> stream, const Options& options)
    : stream_(std::move(stream)), options_(options), owner_(SecureRandom64()) {}

RemoteDispatch::~RemoteDispatch() { stream_->Close(absl::Seconds(5)); }

RemoteDispatch::Counters RemoteDispatch::counters() const { return stream_->counters(); }

absl::StatusOr<uint64_t> RemoteDispatch::HandleOf(const Resource& resource) const {
  return OwnedId(resource, owner_, backend_id_);
}

namespace {

absl::Status UnknownHandleError(uint64_t handle) {
  return absl::NotFoundError(
      absl::StrFormat("no buffer with handle %016x in this session (freed already?)", handle));
}

}  // namespace

absl::StatusOr<uint64_t> RemoteDispatch::KnownSize(uint64_t handle) const {
  // Every buffer of this session was allocated through this dispatcher, so a handle it does
  // not know was freed (HandleOf has already refused other dispatchers' resources).
  absl::MutexLock lock(&sizes_mu_);
  auto it = sizes_.find(handle);
  if (it == sizes_.end()) return UnknownHandleError(handle);
  return it->second;
}

absl::Status RemoteDispatch::CheckKnownRange(uint64_t handle, uint64_t offset, uint64_t length,
                                             const std::string& where) const {
  ASSIGN_OR_RETURN(const uint64_t size, KnownSize(handle));
  const absl::Status in_range = CheckRange(size, offset, length);
  if (in_range.ok()) return in_range;
  // Worded as the daemon words it.
  return absl::Status(in_range.code(), absl::StrFormat("%s: %s", where, in_range.message()));
}

absl::StatusOr<Resource> RemoteDispatch::Allocate(size_t byte_len) {
  Outgoing out;
  out.head.mutable_allocate()->set_bytes(byte_len);
  Call call;
  RETURN_IF_ERROR(stream_->Send(std::move(out), &call, absl::Now() + options_.call_timeout));
  const uint64_t handle = call.reply.allocate().handle();
  {
    absl::MutexLock lock(&sizes_mu_);
    sizes_[handle] = byte_len;
  }
  return Resource::Make(owner_, handle);
}

absl::Status RemoteDispatch::Upload(const Resource& resource, absl::Span<const uint8_t> bytes) {
  const RangedUpload upload{resource, 0, bytes};
  return UploadAtMany({&upload, 1});
}

absl::Status RemoteDispatch::UploadMany(absl::Span<const BufferUpload> uploads) {
  std::vector<RangedUpload> ranged;
  ranged.reserve(uploads.size());
  for (const BufferUpload& u : uploads) ranged.push_back(RangedUpload{u.resource, 0, u.bytes});
  return UploadAtMany(ranged);
}

absl::Status RemoteDispatch::UploadAtMany(absl::Span<const RangedUpload> uploads) {
  if (uploads.size() > limits_.max_ranges) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d uploads in one batch; the daemon accepts at most %d", uploads.size(),
        limits_.max_ranges));
  }
  Outgoing out;
  out.is_upload = true;
  v1::UploadRequest& request = *out.head.mutable_upload();
  uint64_t total = 0;
  for (size_t i = 0; i < uploads.size(); ++i) {
    const RangedUpload& u = uploads[i];
    ASSIGN_OR_RETURN(uint64_t handle, HandleOf(u.resource));
    // Checked before anything is sent: a doomed upload moves no data.
    RETURN_IF_ERROR(
        CheckKnownRange(handle, u.offset, u.bytes.size(), absl::StrFormat("upload range %d", i)));
    ToProto(RangeRef{handle, u.offset, u.bytes.size()}, request.add_ranges());
    if (!u.bytes.empty()) out.data.push_back(u.bytes);
    total = SaturatingAdd(total, u.bytes.size());
  }
  if (total > limits_.max_request_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "an upload of %d bytes exceeds the daemon's per-request limit of %d bytes", total,
        limits_.max_request_bytes));
  }
  out.remaining = total;
  Call call;
  return stream_->Send(std::move(out), &call, absl::Now() + options_.call_timeout);
}

absl::StatusOr<std::vector<uint8_t>> RemoteDispatch::Download(const Resource& resource) {
  std::vector<uint8_t> out;
  RETURN_IF_ERROR(DownloadInto(resource, &out));
  return out;
}

absl::Status RemoteDispatch::DownloadInto(const Resource& resource, std::vector<uint8_t>* output) {
  ASSIGN_OR_RETURN(uint64_t handle, HandleOf(resource));
  ASSIGN_OR_RETURN(const uint64_t size, KnownSize(handle));
  return DownloadRangeInto(resource, 0, size, output);
}

absl::StatusOr<std::vector<uint8_t>> RemoteDispatch::DownloadRange(const Resource& resource,
                                                                   size_t byte_offset,
                                                                   size_t byte_len) {
  std::vector<uint8_t> out;
  RETURN_IF_ERROR(DownloadRangeInto(resource, byte_offset, byte_len, &out));
  return out;
}

absl::Status RemoteDispatch::DownloadRangeInto(const Resource& resource, size_t byte_offset,
                                               size_t byte_len, std::vector<uint8_t>* output) {
  if (byte_len <= limits_.max_request_bytes) {
    const ReadRange range{resource, byte_offset, byte_len};
    return DownloadRangesInto({&range, 1}, {&output, 1});
  }
  // More than one request may move: the range goes in pieces of at most that many bytes. A
  // read changes nothing, so a piece that fails leaves nothing half-done but the output.
  ASSIGN_OR_RETURN(uint64_t handle, HandleOf(resource));
  RETURN_IF_ERROR(CheckKnownRange(handle, byte_offset, byte_len, "read 0"));
  output->resize(byte_len);
  std::vector<uint8_t> piece;
  for (uint64_t done = 0; done < byte_len;) {
    const uint64_t n = std::min<uint64_t>(limits_.max_request_bytes, byte_len - done);
    const ReadRange range{resource, byte_offset + done, n};
    std::vector<uint8_t>* out = &piece;
    RETURN_IF_ERROR(DownloadRangesInto({&range, 1}, {&out, 1}));
    std::memcpy(output->data() + done, piece.data(), n);
    done += n;
  }
  return absl::OkStatus();
}

absl::Status RemoteDispatch::DownloadRangesInto(absl::Span<const ReadRange> ranges,
                                                absl::Span<std::vector<uint8_t>* const> outputs) {
  // One range longer than a request may move goes in pieces, as DownloadRangeInto's does;
  // several ranges are one request, whose limit the daemon checks after the handles and ranges.
  if (ranges.size() == 1 && outputs.size() == 1 && outputs[0] != nullptr &&
      ranges[0].length > limits_.max_request_bytes) {
    return DownloadRangeInto(ranges[0].resource, ranges[0].offset, ranges[0].length, outputs[0]);
  }
  return Execute({}, {}, 0, ranges, outputs);
}

absl::Status RemoteDispatch::Free(Resource resource) {
  ASSIGN_OR_RETURN(uint64_t handle, HandleOf(resource));
  // This dispatcher knows every buffer its session holds, so it answers for unknown and freed
  // ones itself; a free it sends cannot fail but with the session (the daemon defers a free
  // while running work uses the buffer, and runs requests in order, so the next call already
  // sees it). So it goes without waiting: no round trip.
  uint64_t bytes = 0;
  {
    absl::MutexLock lock(&sizes_mu_);
    auto it = sizes_.find(handle);
    if (it == sizes_.end()) return UnknownHandleError(handle);
    bytes = it->second;
    sizes_.erase(it);
  }
  Outgoing out;
  out.head.mutable_free()->set_handle(handle);
  absl::Status sent = stream_->SendDetached(std::move(out));
  if (!sent.ok()) {  // not sent (the session is gone): a retry says so again, not "freed"
    absl::MutexLock lock(&sizes_mu_);
    sizes_.emplace(handle, bytes);
  }
  return sent;
}

absl::Status RemoteDispatch::Dispatch(const Program& program, absl::Span<const Resource> resources,
                                      std::optional<Grid> grid_override) {
  const Step step{&program, resources, grid_override};
  return Execute({&step, 1}, {}, 0, {}, {});
}

absl::Status RemoteDispatch::DispatchSequenceReadRangesInto(
    absl::Span<const Step> steps, absl::Span<const ReadRange> read_ranges,
    absl::Span<std::vector<uint8_t>* const> outputs) {
  return Execute(steps, {}, 0, read_ranges, outputs);
}

absl::Status RemoteDispatch::DispatchRepeatedSequenceReadRangesInto(
    absl::Span<const Step> prefix_steps, absl::Span<const Step> repeated_steps,
    uint32_t repeat_count, absl::Span<const ReadRange> read_ranges,
    absl::Span<std::vector<uint8_t>* const> outputs) {
  return Execute(prefix_steps, repeated_steps, repeat_count, read_ranges, outputs);
}

absl::Status RemoteDispatch::Execute(absl::Span<const Step> prefix,
                                     absl::Span<const Step> repeated, uint32_t repeat_count,
                                     absl::Span<const ReadRange> ranges,
                                     absl::Span<std::vector<uint8_t>* const> outputs) {
  RETURN_IF_ERROR(CheckOutputs(ranges.size(), outputs));
  RETURN_IF_ERROR(CheckSteps(prefix));
  RETURN_IF_ERROR(CheckSteps(repeated));
  if (ranges.size() > limits_.max_ranges) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d reads in one call; the daemon accepts at most %d", ranges.size(), limits_.max_ranges));
  }
  Outgoing out;
  Call call;
  const bool reads_only = prefix.empty() && repeated.empty();
  v1::ReadRequest* read = reads_only ? out.head.mutable_read() : nullptr;
  v1::ExecuteRequest* execute = reads_only ? nullptr : out.head.mutable_execute();
  std::vector<uint64_t> handles;
  const auto add_steps = [&](absl::Span<const Step> steps,
                             google::protobuf::RepeatedPtrField<v1::Step>* into) -> absl::Status {
    for (const Step& step : steps) {
      handles.clear();
      for (const Resource& r : step.resources) {
        ASSIGN_OR_RETURN(uint64_t handle, HandleOf(r));
        handles.push_back(handle);
      }
      ToProto(StepRef{step.program->kernel, step.program->params, handles, step.grid,
                      step.program->version},
              into->Add());
    }
    return absl::OkStatus();
  };
  if (execute != nullptr) {
    RETURN_IF_ERROR(add_steps(prefix, execute->mutable_prefix()));
    RETURN_IF_ERROR(add_steps(repeated, execute->mutable_repeated()));
    execute->set_repeat_count(repeat_count);
  }
  google::protobuf::RepeatedPtrField<v1::Range>* reads =
      reads_only ? read->mutable_ranges() : execute->mutable_reads();
  call.outputs.assign(outputs.begin(), outputs.end());
  call.lengths.reserve(ranges.size());
  for (const ReadRange& r : ranges) {
    ASSIGN_OR_RETURN(uint64_t handle, HandleOf(r.resource));
    ToProto(RangeRef{handle, r.offset, r.length}, reads->Add());
    call.lengths.push_back(r.length);
    call.expected = SaturatingAdd(call.expected, r.length);
  }
  if (out.head.ByteSizeLong() > limits_.max_message_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the request takes %d bytes; the daemon accepts messages of at most %d bytes",
        out.head.ByteSizeLong(), limits_.max_message_bytes));
  }
  return stream_->Send(std::move(out), &call, absl::Now() + options_.call_timeout);
}

absl::Status RemoteDispatch::Ping(size_t payload_bytes) {
  Outgoing out;
  out.head.mutable_ping()->mutable_payload()->assign(payload_bytes, 'p');
  Call call;
  return stream_->Send(std::move(out), &call, absl::Now() + options_.call_timeout);
}

}  // namespace sluice
