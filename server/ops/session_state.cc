#include "sluice/server/ops/session_state.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"
#include "sluice/proto/codec.h"
#include "sluice/server/ops/read.h"

namespace sluice {

namespace {

uint64_t SaturatingAdd(uint64_t total, uint64_t length) {
  return length > ~uint64_t{0} - total ? ~uint64_t{0} : total + length;
}

}  // namespace

uint64_t TotalLength(absl::Span<const RangeRef> ranges) {
  uint64_t total = 0;
  for (const RangeRef& r : ranges) total = SaturatingAdd(total, r.length);
  return total;
}

uint64_t TotalLength(const google::protobuf::RepeatedPtrField<v1::Range>& ranges) {
  uint64_t total = 0;
  for (const v1::Range& r : ranges) total = SaturatingAdd(total, r.length());
  return total;
}

std::string PeerHost(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos || colon < 5 ? peer : peer.substr(0, colon);
}

Job RefusalJob(uint64_t id, v1::SessionRequest::OpCase op, absl::Status status) {
  Job job;
  job.id = id;
  job.op = op;
  job.accepted = absl::Now();
  job.cheap = true;
  job.run = [id, status = std::move(status)](Responses* out) {
    SessionState::Reply(id, status, out);
  };
  return job;
}

SessionState::SessionState(SessionManager* manager, std::string peer,
                           SessionManager::Listener* listener, std::optional<Principal> principal,
                           SessionResumer* resumer, Metrics* metrics,
                           SharedRegions* shared_regions)
    : manager(manager),
      resumer(resumer),
      metrics(metrics),
      shared_regions(shared_regions),
      peer(std::move(peer)),
      principal(std::move(principal)),
      listener(listener),
      limits(manager->options().limits),
      started(absl::Now()),
      chunk_size(manager->options().max_chunk_size) {}

SessionState::~SessionState() = default;

TransferBudget& SessionState::Transfers() const {
  TransferBudget* client = transfers.load();
  return client != nullptr ? *client : manager->transfers();
}

absl::Status SessionState::NotOpenError() {
  return absl::FailedPreconditionError(
      "the session is not open: the first request of a stream must be open");
}

absl::Status SessionState::RequireOpen() const {
  return ticket != nullptr ? absl::OkStatus() : NotOpenError();
}

void SessionState::Reply(uint64_t id, const absl::Status& status, Responses* out) {
  v1::SessionResponse& response = out->emplace_back();
  response.set_id(id);
  response.set_last(true);
  ToProto(status, response.mutable_status());
}

std::string SessionState::LogKey() const {
  if (!principal.has_value()) return PeerHost(peer);
  return principal->tenant.empty() ? principal->key : absl::StrCat("tenant ", principal->tenant);
}

LogFields SessionState::Fields() const {
  return {.session = ticket != nullptr ? ticket->id() : "",
          .peer = peer,
          .client = client_name,
          .tenant = Owner()};
}

absl::StatusOr<absl::Span<uint8_t>> SessionState::SharedSpanOf(
    const v1::SharedSpan& span, uint64_t expected, std::shared_ptr<SharedRegion>* region) const {
  if (span.length() != expected) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the shared span holds %d bytes; the ranges hold %d", span.length(), expected));
  }
  *region = shared != nullptr ? shared->region() : nullptr;
  if (*region == nullptr) {
    return absl::FailedPreconditionError(
        shared == nullptr ? "this session has no shared memory (ask for it at open, from a "
                            "daemon that listens on a Unix socket)"
                          : "no shared memory is attached to this session yet");
  }
  const absl::Span<uint8_t> bytes = (*region)->bytes();
  RETURN_IF_ERROR(SharedRegion::CheckSpan(bytes.size(), span.offset(), span.length()));
  return bytes.subspan(span.offset(), span.length());
}

void SessionState::Publish(std::unique_ptr<SessionManager::Ticket> opened) {
  ticket = std::move(opened);
  open_refused.store(false);
  transfers.store(&ticket->transfers());
  session.store(&ticket->session());
  ticket->Listen(listener);
}

void SessionState::Withdraw() {
  session.store(nullptr);
  transfers.store(nullptr);
  if (ticket != nullptr) ticket->Listen(nullptr);
}

std::shared_ptr<std::atomic<bool>> SessionState::NewCancelFlag(uint64_t id) {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  absl::MutexLock lock(&cancel_mu_);
  pending_.emplace(id, flag);
  return flag;
}

int SessionState::CancelPending(uint64_t target) {
  absl::MutexLock lock(&cancel_mu_);
  int found = 0;
  for (auto [it, end] = pending_.equal_range(target); it != end; ++it) {
    it->second->store(true);
    ++found;
  }
  return found;
}

void SessionState::Unregister(uint64_t id, const std::shared_ptr<std::atomic<bool>>& flag) {
  absl::MutexLock lock(&cancel_mu_);
  for (auto [it, end] = pending_.equal_range(id); it != end; ++it) {
    if (it->second == flag) {
      pending_.erase(it);
      return;
    }
  }
}

SessionState::QueuedHandle::QueuedHandle(SessionState* state, uint64_t handle, uint64_t bytes)
    : state_(state), handle_(handle) {
  if (state_ == nullptr) return;
  absl::MutexLock lock(&state_->queued_mu_);
  QueuedAllocation& queued = state_->queued_[handle_];
  ++queued.count;
  queued.bytes = bytes;
}

SessionState::QueuedHandle::~QueuedHandle() {
  if (state_ == nullptr) return;
  absl::MutexLock lock(&state_->queued_mu_);
  auto it = state_->queued_.find(handle_);
  if (it != state_->queued_.end() && --it->second.count == 0) state_->queued_.erase(it);
}

std::optional<uint64_t> SessionState::QueuedSize(uint64_t handle) {
  absl::MutexLock lock(&queued_mu_);
  auto it = queued_.find(handle);
  if (it == queued_.end()) return std::nullopt;
  return it->second.bytes;
}

void CarriedSession::Log(const char* why) const {
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

}  // namespace sluice
