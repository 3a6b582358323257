#include "sluice/client/remote_dispatch.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "grpcpp/grpcpp.h"
#include "sluice/base/copy.h"
#include "sluice/base/random.h"
#include "sluice/base/status_macros.h"
#include "sluice/base/utf8.h"
#include "sluice/client/internal/call_checks.h"
#include "sluice/client/remote/channel.h"
#include "sluice/client/remote/shared_memory.h"
#include "sluice/client/remote/stream.h"
#include "sluice/proto/codec.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {
namespace {

// Sum of lengths, saturating, so absurd requests cannot wrap to small ones.
uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return b > ~uint64_t{0} - a ? ~uint64_t{0} : a + b; }

// Where a transfer of parts one after another (uploads, read ranges) moved through shared
// memory in pieces has got to: Take visits the nonempty stretches of the next `n` bytes, part
// by part, as (part, offset within it, bytes, offset within the n), passing empty parts by.
class PartCursor {
 public:
  template <typename Length, typename Visit>
  void Take(uint64_t n, Length length, Visit visit) {
    for (uint64_t taken = 0; taken < n;) {
      const uint64_t m = std::min(n - taken, length(part_) - within_);
      if (m > 0) visit(part_, within_, m, taken);
      taken += m;
      within_ += m;
      if (within_ == length(part_)) {
        ++part_;
        within_ = 0;
      }
    }
  }

 private:
  size_t part_ = 0;
  uint64_t within_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RemoteDispatch>> RemoteDispatch::Connect(const Options& options) {
  if (options.target.empty()) return absl::InvalidArgumentError("no daemon address given");
  // A message's strings are UTF-8 (the daemon would end a stream that sent anything else).
  if (!IsValidUtf8(options.client_name)) {
    return absl::InvalidArgumentError("client_name is not valid UTF-8");
  }
  if (options.reply_poll < absl::ZeroDuration() || options.reply_poll > kMaxReplyPoll) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "reply_poll is %s: it is between 0 and %s", absl::FormatDuration(options.reply_poll),
        absl::FormatDuration(kMaxReplyPoll)));
  }
  // The open is the first call on the channel: a daemon that cannot be reached fails it with
  // gRPC's reason (refused, no such host), and one that refuses the session with its own.
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   MakeSessionChannel(options.target, options.credentials));
  auto stream = std::make_unique<Stream>(std::move(channel), options.credentials);
  stream->set_reply_poll(options.reply_poll);
  stream->Start();
  std::unique_ptr<RemoteDispatch> dispatch(new RemoteDispatch(std::move(stream), options));

  Outgoing out;
  v1::OpenRequest& open = *out.head.mutable_open();
  // The daemon keeps kMaxClientNameBytes of it: no more is sent (cut where a character begins).
  size_t name_bytes = std::min(options.client_name.size(), kMaxClientNameBytes);
  while (name_bytes < options.client_name.size() && name_bytes > 0 &&
         (static_cast<unsigned char>(options.client_name[name_bytes]) & 0xc0) == 0x80) {
    --name_bytes;
  }
  open.set_client_name(options.client_name.substr(0, name_bytes));
  open.set_chunk_size(options.chunk_size);
  open.set_resumable(options.resumable);
  // Shared memory is for a daemon on this host.
  open.set_shared_memory(options.shared_memory && absl::StartsWith(options.target, "unix:"));
  Call call;
  const absl::Status opened_status =
      dispatch->stream_->Send(std::move(out), &call, absl::Now() + options.connect_timeout);
  if (absl::IsDeadlineExceeded(opened_status)) {
    return absl::UnavailableError(absl::StrFormat("cannot reach sluiced at %s within %s",
                                                  options.target,
                                                  absl::FormatDuration(options.connect_timeout)));
  }
  if (!opened_status.ok()) {
    // The daemon's refusal (its reply: draining, at its session limit), or why it could not be
    // reached at all (the stream's end: refused, no such host).
    return absl::Status(
        opened_status.code(),
        call.reply.last() || absl::IsUnauthenticated(opened_status) ||
                absl::IsPermissionDenied(opened_status)
            ? absl::StrFormat("sluiced at %s refused the session: %s", options.target,
                              opened_status.message())
            : absl::StrFormat("cannot reach sluiced at %s: %s", options.target,
                              opened_status.message()));
  }
  const v1::OpenResponse& opened = call.reply.open();
  dispatch->session_id_ = opened.session_id();
  dispatch->backend_id_ = opened.backend_id();
  dispatch->backend_version_ = opened.backend_version();
  ASSIGN_OR_RETURN(dispatch->limits_, GrantedLimitsFromProto(opened.limits()));
  dispatch->pipelined_ = options.pipelined && opened.client_handles();
  if (opened.has_shared_memory() && opened.shared_memory().max_bytes() > 0) {
    dispatch->shared_socket_ = opened.shared_memory().socket();
    dispatch->shared_token_ = opened.shared_memory().token();
    dispatch->shared_max_ = opened.shared_memory().max_bytes();
  }
  dispatch->stream_->set_chunk_size(dispatch->limits_.chunk_size);
  // A session that a balanced target placed on one of its daemons resumes on that daemon.
  std::shared_ptr<grpc::Channel> pinned;
  if (!opened.resume_token().empty() && NamesSeveralDaemons(options.target)) {
    const std::string peer = dispatch->stream_->peer();
    if (!peer.empty()) {
      ASSIGN_OR_RETURN(pinned,
                       MakePinnedChannel(peer, options.credentials,
                                         PinnedServerName(options.target, options.credentials)));
    }
  }
  dispatch->stream_->set_resumable(
      opened.resume_token(), absl::Milliseconds(static_cast<int64_t>(opened.resume_grace_ms())),
      std::move(pinned));
  return dispatch;
}

RemoteDispatch::RemoteDispatch(std::unique_ptr<Stream> stream, const Options& options)
    : stream_(std::move(stream)), options_(options), owner_(SecureRandom64()) {}

RemoteDispatch::~RemoteDispatch() { stream_->Close(absl::Seconds(5)); }

RemoteDispatch::Counters RemoteDispatch::counters() const {
  Counters counters = stream_->counters();
  counters.shared_bytes = shared_bytes_.load();
  return counters;
}

bool RemoteDispatch::TakesSharedMemory(uint64_t bytes) const {
  return !shared_socket_.empty() && bytes >= kSharedMinBytes && bytes <= shared_max_ &&
         bytes <= limits_.max_request_bytes;
}

absl::StatusOr<SharedMemory*> RemoteDispatch::SharedMemoryOfLocked(uint64_t bytes,
                                                                   bool past_staging) {
  const uint64_t start = past_staging ? staged_ : 0;
  if (bytes > shared_max_ - std::min(start, shared_max_)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%d bytes of shared memory%s; the daemon maps at most %d", bytes,
        past_staging ? absl::StrFormat(" past a staging area of %d", start) : "", shared_max_));
  }
  const uint64_t needed = start + bytes;
  if (shared_ != nullptr && shared_->bytes().size() >= needed) return shared_.get();
  // Grown in powers of two from 64 MiB, so that a few attaches serve a session.
  uint64_t size = uint64_t{64} << 20;
  while (size < needed) size *= 2;
  size = std::min(size, shared_max_);
  ASSIGN_OR_RETURN(std::unique_ptr<SharedMemory> memory,
                   SharedMemory::Attach(shared_socket_, shared_token_, size,
                                        options_.connect_timeout));
  if (shared_ != nullptr && past_staging && staged_ > 0) {
    std::memcpy(memory->bytes().data(), shared_->bytes().data(), staged_);  // the staged bytes
  }
  shared_ = std::move(memory);
  return shared_.get();
}

absl::StatusOr<absl::Span<uint8_t>> RemoteDispatch::StagingArea(size_t bytes) {
  if (shared_socket_.empty()) {
    return absl::FailedPreconditionError(
        "this session has no shared memory (a daemon on this host, on a Unix socket, offers it)");
  }
  absl::MutexLock lock(&shared_mu_);
  staged_ = 0;
  ASSIGN_OR_RETURN(SharedMemory * memory, SharedMemoryOfLocked(bytes, /*past_staging=*/false));
  staged_ = bytes;
  return memory->bytes().subspan(0, bytes);
}

std::optional<absl::Status> RemoteDispatch::UploadShared(absl::Span<const RangedUpload> uploads,
                                                         uint64_t total) {
  absl::MutexLock lock(&shared_mu_);
  if (shared_failed_) return std::nullopt;
  // Already in the shared memory, in order and back to back (StagingArea's): nothing to copy.
  std::optional<uint64_t> offset;
  bool any_inside = false;
  if (shared_ != nullptr) {
    uint64_t next = 0;
    bool contiguous = true;
    for (const RangedUpload& u : uploads) {
      if (u.bytes.empty()) continue;
      const std::optional<uint64_t> at = shared_->OffsetOf(u.bytes);
      any_inside |= at.has_value();
      if (!at.has_value() || (offset.has_value() && *at != next)) contiguous = false;
      if (at.has_value() && !offset.has_value()) offset = at;
      next = at.value_or(0) + u.bytes.size();
    }
    if (!contiguous) offset.reset();
  }
  if (offset.has_value()) {
    Outgoing out;
    v1::UploadRequest& request = *out.head.mutable_upload();
    for (const RangedUpload& u : uploads) {
      ToProto(RangeRef{*HandleOf(u.resource), u.offset, u.bytes.size()}, request.add_ranges());
    }
    request.mutable_shared()->set_offset(*offset);
    request.mutable_shared()->set_length(total);
    request.set_last(true);
    Call call;
    absl::Status status =
        stream_->Send(std::move(out), &call, absl::Now() + options_.call_timeout);
    if (status.ok()) shared_bytes_ += total;
    return status;
  }
  // Bytes partly in the shared memory could be overwritten by copying the rest there.
  if (any_inside) return std::nullopt;
  // Copied in, in pieces through a ring of slots past the staging area: the copy of the next
  // piece overlaps the daemon's write of the last. Every range was checked before the first
  // piece goes (UploadAtMany), and a piece needs no memory of the daemon's, so only the loss of
  // the session, which takes its buffers with it, can fail a later piece: to whoever can see
  // the buffers, the upload is still all or nothing.
  const uint64_t ring = std::min(total, kSharedPieceBytes * kSharedSlots);
  absl::StatusOr<SharedMemory*> memory = SharedMemoryOfLocked(ring, /*past_staging=*/true);
  if (!memory.ok()) {
    shared_failed_ = !absl::IsResourceExhausted(memory.status());
    return std::nullopt;
  }
  uint8_t* const slots = (*memory)->bytes().data() + staged_;
  std::deque<Call> in_flight;
  absl::Status status;
  const auto wait_oldest = [&] {
    absl::Status done = stream_->Wait(&in_flight.front(), absl::Now() + options_.call_timeout);
    in_flight.pop_front();
    if (status.ok()) status = done;
  };
  PartCursor next;
  for (uint64_t sent = 0, k = 0; sent < total && status.ok(); ++k) {
    if (in_flight.size() == kSharedSlots) wait_oldest();  // its slot is free again
    if (!status.ok()) break;
    const uint64_t n = std::min(kSharedPieceBytes, total - sent);
    const uint64_t slot = (k % kSharedSlots) * kSharedPieceBytes;
    Outgoing out;
    v1::UploadRequest& request = *out.head.mutable_upload();
    next.Take(
        n, [&](size_t u) { return uint64_t{uploads[u].bytes.size()}; },
        [&](size_t u, uint64_t within, uint64_t m, uint64_t filled) {
          const RangedUpload& up = uploads[u];
          ToProto(RangeRef{*HandleOf(up.resource), up.offset + within, m}, request.add_ranges());
          CopyForReader(slots + slot + filled, up.bytes.data() + within, m);  // the daemon reads it
        });
    request.mutable_shared()->set_offset(staged_ + slot);
    request.mutable_shared()->set_length(n);
    request.set_last(true);
    in_flight.emplace_back();
    if (absl::Status begun = stream_->Begin(std::move(out), &in_flight.back()); !begun.ok()) {
      in_flight.pop_back();
      status = begun;
      break;
    }
    sent += n;
  }
  while (!in_flight.empty()) wait_oldest();
  if (status.ok()) shared_bytes_ += total;
  return status;
}

std::optional<absl::Status> RemoteDispatch::ReadShared(absl::Span<const ReadRange> ranges,
                                                       ReadTarget target) {
  uint64_t total = 0;
  for (const ReadRange& r : ranges) total = SaturatingAdd(total, r.length);
  if (!TakesSharedMemory(total) || ranges.size() > limits_.max_ranges) {
    return std::nullopt;  // the stream's path says what is wrong, if anything
  }
  // Every range is checked before the first piece goes, which names only what it reads: a
  // later piece fails only with the device or the session, as a streamed read's later chunks.
  // A range that is not good goes by the stream, whose daemon says what is wrong (a pipelined
  // allocation it refused, which it reports first, as well as a freed buffer or a bad range).
  std::vector<uint64_t> handles;
  handles.reserve(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    absl::StatusOr<uint64_t> handle = HandleOf(ranges[i].resource);
    if (!handle.ok()) return handle.status();
    if (!CheckKnownRange(*handle, ranges[i].offset, ranges[i].length, "").ok()) {
      return std::nullopt;
    }
    handles.push_back(*handle);
  }
  absl::MutexLock lock(&shared_mu_);
  if (shared_failed_) return std::nullopt;
  // Read in pieces through a ring of slots past the staging area: the daemon writes the next
  // piece while this copies the last one out, and the client touches the ring's bytes alone,
  // however long the read.
  const uint64_t ring = std::min(total, kSharedReadPieceBytes * kSharedReadSlots);
  absl::StatusOr<SharedMemory*> memory = SharedMemoryOfLocked(ring, /*past_staging=*/true);
  if (!memory.ok()) {
    shared_failed_ = !absl::IsResourceExhausted(memory.status());
    return std::nullopt;
  }
  const uint8_t* const slots = (*memory)->bytes().data() + staged_;
  // Where the pieces land, in order: each range's target is asked as the copying reaches it.
  size_t landing = 0;                // the range the next byte copied out belongs to...
  uint64_t landed = 0;               // ...and how many of its bytes are in already
  absl::Span<uint8_t> into;          // its target, once asked
  const auto land = [&](const uint8_t* from, uint64_t n) -> absl::Status {
    for (;;) {
      while (landing < ranges.size() && landed == ranges[landing].length) {
        if (ranges[landing].length == 0 && target(landing, 0).size() != 0) {
          return OutputRefused(landing);
        }
        ++landing;
        landed = 0;
      }
      if (n == 0) return absl::OkStatus();
      if (landed == 0) {
        into = target(landing, ranges[landing].length);
        if (into.size() != ranges[landing].length) return OutputRefused(landing);
      }
      const uint64_t m = std::min(n, ranges[landing].length - landed);
      std::memcpy(into.data() + landed, from, m);
      from += m;
      n -= m;
      landed += m;
    }
  };
  struct Piece {
    Call call;
    uint64_t slot = 0, bytes = 0;
  };
  std::deque<Piece> in_flight;
  // Should a target throw, the pieces in flight are waited for before their calls go.
  const absl::Cleanup waited = [&] {
    for (; !in_flight.empty(); in_flight.pop_front()) {
      (void)stream_->Wait(&in_flight.front().call, absl::Now() + options_.call_timeout);
    }
  };
  absl::Status status;
  const auto wait_oldest = [&] {
    Piece& oldest = in_flight.front();
    absl::Status done = stream_->Wait(&oldest.call, absl::Now() + options_.call_timeout);
    if (status.ok()) status = done.ok() ? land(slots + oldest.slot, oldest.bytes) : done;
    in_flight.pop_front();
  };
  PartCursor next;
  for (uint64_t asked = 0, k = 0; asked < total && status.ok(); ++k) {
    if (in_flight.size() == kSharedReadSlots) wait_oldest();  // its slot is free again
    if (!status.ok()) break;
    const uint64_t n = std::min(kSharedReadPieceBytes, total - asked);
    const uint64_t slot = (k % kSharedReadSlots) * kSharedReadPieceBytes;
    Outgoing out;
    v1::ReadRequest& request = *out.head.mutable_read();
    next.Take(
        n, [&](size_t r) { return ranges[r].length; },
        [&](size_t r, uint64_t within, uint64_t m, uint64_t) {
          ToProto(RangeRef{handles[r], ranges[r].offset + within, m}, request.add_ranges());
        });
    request.mutable_shared()->set_offset(staged_ + slot);
    request.mutable_shared()->set_length(n);
    Piece& piece = in_flight.emplace_back();
    piece.slot = slot;
    piece.bytes = n;
    if (absl::Status begun = stream_->Begin(std::move(out), &piece.call); !begun.ok()) {
      in_flight.pop_back();
      status = begun;
      break;
    }
    asked += n;
  }
  while (!in_flight.empty()) wait_oldest();
  if (status.ok()) shared_bytes_ += total;
  return status;
}

std::optional<absl::Time> RemoteDispatch::draining_until() const {
  return stream_->draining_until();
}

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
  if (pipelined_) return AllocatePipelined(byte_len);
  Outgoing out;
  out.head.mutable_allocate()->set_bytes(byte_len);
  Call call;
  RETURN_IF_ERROR(stream_->Send(std::move(out), &call, absl::Now() + options_.call_timeout));
  const uint64_t handle = call.reply.allocate().handle();
  {
    absl::MutexLock lock(&sizes_mu_);
    RememberLocked(handle, byte_len);
  }
  return MakeResource(owner_, handle);
}

void RemoteDispatch::RememberLocked(uint64_t handle, uint64_t bytes) {
  held_bytes_ += bytes - ForgetLocked(handle);
  sizes_[handle] = bytes;
}

uint64_t RemoteDispatch::ForgetLocked(uint64_t handle) {
  auto it = sizes_.find(handle);
  if (it == sizes_.end()) return 0;
  const uint64_t bytes = it->second;
  held_bytes_ -= bytes;
  sizes_.erase(it);
  return bytes;
}

absl::StatusOr<Resource> RemoteDispatch::AllocatePipelined(size_t byte_len) {
  // The session's own limits are checked here, as the daemon words them; what only the daemon
  // knows (device memory, quotas shared with other sessions) is reported by the next call
  // that waits.
  uint64_t handle = 0;
  {
    absl::MutexLock lock(&sizes_mu_);
    if (sizes_.size() >= limits_.max_buffers) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("session holds the most buffers allowed (%d)", limits_.max_buffers));
    }
    const uint64_t held = held_bytes_;
    if (byte_len > limits_.memory_quota || held > limits_.memory_quota - byte_len) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("session memory quota: %d bytes requested, %d of %d in use", byte_len,
                          held, limits_.memory_quota));
    }
    do {
      handle = SecureRandom64();
    } while (sizes_.contains(handle));
    RememberLocked(handle, byte_len);
  }
  Outgoing out;
  v1::AllocateRequest& request = *out.head.mutable_allocate();
  request.set_bytes(byte_len);
  request.set_handle(handle);
  absl::Status sent =
      stream_->SendPipelined(std::move(out), "an allocation", [this, handle] { Forget(handle); });
  if (!sent.ok()) {
    Forget(handle);
    return sent;
  }
  return MakeResource(owner_, handle);
}

void RemoteDispatch::Forget(uint64_t handle) {
  absl::MutexLock lock(&sizes_mu_);
  ForgetLocked(handle);
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
  if (TakesSharedMemory(total)) {
    if (std::optional<absl::Status> shared = UploadShared(uploads, total)) return *shared;
  }
  out.remaining = total;
  Call call;
  return stream_->Send(std::move(out), &call, absl::Now() + options_.call_timeout);
}

absl::StatusOr<uint64_t> RemoteDispatch::BufferSize(const Resource& resource) const {
  ASSIGN_OR_RETURN(uint64_t handle, HandleOf(resource));
  return KnownSize(handle);
}

absl::Status RemoteDispatch::ReadInPieces(const ReadRange& range, ReadTarget target) {
  ASSIGN_OR_RETURN(uint64_t handle, HandleOf(range.resource));
  RETURN_IF_ERROR(CheckKnownRange(handle, range.offset, range.length, "read 0"));
  const absl::Span<uint8_t> output = target(0, range.length);
  if (output.size() != range.length) return OutputRefused(0);
  for (uint64_t done = 0; done < range.length;) {
    const uint64_t n = std::min<uint64_t>(limits_.max_request_bytes, range.length - done);
    const ReadRange part{range.resource, range.offset + done, n};
    RETURN_IF_ERROR(Read({&part, 1}, [&](size_t, uint64_t) { return output.subspan(done, n); }));
    done += n;
  }
  return absl::OkStatus();
}

absl::Status RemoteDispatch::Read(absl::Span<const ReadRange> ranges, ReadTarget target) {
  // One range longer than a request may move goes in pieces; several ranges are one request,
  // whose limit the daemon checks after the handles and ranges.
  if (ranges.size() == 1 && ranges[0].length > limits_.max_request_bytes) {
    return ReadInPieces(ranges[0], target);
  }
  if (std::optional<absl::Status> shared = ReadShared(ranges, target)) return *shared;
  return Execute({}, {}, 0, ranges, target);
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
    if (!sizes_.contains(handle)) return UnknownHandleError(handle);
    bytes = ForgetLocked(handle);
  }
  Outgoing out;
  out.head.mutable_free()->set_handle(handle);
  // Pipelined, a free may follow an allocation the daemon has yet to refuse: its failure is
  // that one's, reported by the next call that waits, and must not end the session.
  absl::Status sent = pipelined_ ? stream_->SendPipelined(std::move(out), "a free")
                                 : stream_->SendDetached(std::move(out));
  if (!sent.ok()) {  // not sent (the session is gone): a retry says so again, not "freed"
    absl::MutexLock lock(&sizes_mu_);
    RememberLocked(handle, bytes);
  }
  return sent;
}

absl::Status RemoteDispatch::Execute(absl::Span<const Step> prefix,
                                     absl::Span<const Step> repeated, uint32_t repeat_count,
                                     absl::Span<const ReadRange> ranges, ReadTarget target) {
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
        // Pipelined, a dispatch naming a buffer this session no longer holds fails now.
        if (pipelined_) RETURN_IF_ERROR(KnownSize(handle).status());
        handles.push_back(handle);
      }
      // No catalog's kernel has a name past UTF-8, nor could a message carry it.
      if (!IsValidUtf8(step.program->kernel)) {
        const std::string_view name = step.program->kernel;
        const std::string_view shown = name.substr(0, 64);
        return absl::NotFoundError(absl::StrFormat(
            "no kernel named \"%s\"%s in the catalog (the name is not UTF-8)",
            absl::CHexEscape(absl::string_view(shown.data(), shown.size())),
            name.size() > shown.size() ? "..." : ""));
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
  call.target = &target;
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
  if (pipelined_ && ranges.empty()) {
    return stream_->SendPipelined(std::move(out), "a dispatch");
  }
  return stream_->Send(std::move(out), &call, absl::Now() + options_.call_timeout);
}

absl::Status RemoteDispatch::Ping(size_t payload_bytes) {
  Outgoing out;
  out.head.mutable_ping()->mutable_payload()->assign(payload_bytes, 'p');
  Call call;
  return stream_->Send(std::move(out), &call, absl::Now() + options_.call_timeout);
}

void RemoteDispatch::Cancel() { stream_->CancelInFlight(); }

}  // namespace sluice
