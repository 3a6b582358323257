#include "client/remote/stream.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "client/remote/channel.h"
#include "proto/codec.h"
#include "proto/contract.h"

namespace sluice {

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeSessionChannel(
    const std::string& target, const ClientCredentials& credentials) {
  grpc::ChannelArguments args;
  // Notice a vanished daemon host within half a minute even while a long call runs: pinged
  // every 10 s, given 20 s to answer (a busy daemon answers pings from its I/O threads).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // Replies are at most one chunk plus a little framing.
  args.SetMaxReceiveMessageSize(kMaxChunkSize + (1 << 20));
  // A connection per session: one job's transfer never queues behind another's.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return MakeChannel(target, credentials, std::move(args));
}

bool Outgoing::Next(v1::SessionRequest* msg, uint32_t chunk) {
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

void RemoteDispatch::Stream::Start(const ClientCredentials& credentials) {
  AddToken(credentials, &context_);
  stub_->async()->Session(&context_, this);
  // Writes start from caller threads at any time; the hold keeps OnDone from running until no
  // write can start any more.
  AddHold();
  StartRead(&read_msg_);
  StartCall();
}

void RemoteDispatch::Stream::set_chunk_size(uint32_t chunk) {
  absl::MutexLock lock(&mu_);
  chunk_size_ = chunk;
}

std::optional<absl::Time> RemoteDispatch::Stream::draining_until() const {
  absl::MutexLock lock(&mu_);
  return draining_until_;
}

RemoteDispatch::Counters RemoteDispatch::Stream::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

absl::Status RemoteDispatch::Stream::Send(Outgoing out, Call* call, absl::Time deadline) {
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

absl::Status RemoteDispatch::Stream::SendDetached(Outgoing out) {
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

void RemoteDispatch::Stream::Close(absl::Duration grace) {
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

void RemoteDispatch::Stream::OnWriteDone(bool ok) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    // The stream is broken: no more writes; OnDone follows with why, and completes every call.
    if (!ok) write_failed_ = true;
    AdvanceLocked(&actions);
  }
  Apply(actions);
}

void RemoteDispatch::Stream::OnWritesDoneDone(bool) {
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    writes_done_complete_ = true;
    AdvanceLocked(&actions);
  }
  Apply(actions);
}

void RemoteDispatch::Stream::OnReadDone(bool ok) {
  Actions actions;
  bool keep_reading = false;
  {
    absl::MutexLock lock(&mu_);
    if (!ok) {
      // The stream is ending; OnDone follows with why (the daemon's status, or gRPC's: a
      // connection refused, a name that does not resolve), and completes every waiting call.
      read_ended_ = true;
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

void RemoteDispatch::Stream::OnDone(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  // A daemon that refuses the caller's credentials says so with its own code (the session is
  // gone all the same); every other end is Unavailable.
  const bool refused = status.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
                       status.error_code() == grpc::StatusCode::PERMISSION_DENIED;
  BreakLocked(closing_ && status.ok()
                  ? absl::UnavailableError("the session is closed")
                  : absl::Status(refused ? static_cast<absl::StatusCode>(status.error_code())
                                         : absl::StatusCode::kUnavailable,
                                 absl::StrFormat("the session ended: %s",
                                                 status.error_message())));
  done_ = true;
}

absl::Status RemoteDispatch::Stream::DeliverLocked() {
  v1::SessionResponse& r = read_msg_;
  if (r.has_notice()) {  // answers no request
    if (r.notice().kind() == v1::Notice::DRAINING) {
      draining_until_ = absl::FromUnixMillis(r.notice().deadline_unix_ms());
    }
    return absl::OkStatus();
  }
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
  call->status = StatusFromProto(r.status());
  if (!outgoing_.empty() && outgoing_.front().call_id <= call->id) {
    // Answered before it was sent in full: only a refused upload may be (the daemon answers a
    // bad upload as soon as it knows, and drops what still arrives of it). The rest of it is
    // not sent: it must never be read from the caller's memory once the caller has returned.
    Outgoing& rest = outgoing_.front();
    if (rest.call_id != call->id || !rest.is_upload || !rest.head_sent || call->status.ok()) {
      return absl::InternalError(absl::StrFormat(
          "sluiced answered request %d before it was sent in full", call->id));
    }
    outgoing_.pop_front();
  }
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

void RemoteDispatch::Stream::BreakLocked(absl::Status status) {
  if (broken_.ok()) broken_ = std::move(status);
  outgoing_.clear();
  for (Call* call : calls_) {
    call->status = broken_;
    call->done = true;
  }
  calls_.clear();
}

void RemoteDispatch::Stream::AdvanceLocked(Actions* actions) {
  if (!writing_ && broken_.ok() && !read_ended_ && !write_failed_ && !writes_done_) {
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
  if (!hold_released_ && !writing_ &&
      (!broken_.ok() || read_ended_ || write_failed_ || writes_done_complete_)) {
    hold_released_ = true;
    actions->release_hold = true;
  }
}

void RemoteDispatch::Stream::Apply(const Actions& actions) {
  if (actions.write) StartWrite(&write_msg_);
  if (actions.writes_done) StartWritesDone();
  if (actions.release_hold) RemoveHold();
}

}  // namespace sluice
