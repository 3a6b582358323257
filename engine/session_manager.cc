#include "engine/session_manager.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/random.h"

namespace sluice {

Session::Options SessionOptionsFor(const SessionLimits& limits) {
  Session::Options options;
  options.table.memory_quota = limits.memory_quota;
  options.table.max_buffers = limits.max_buffers;
  options.max_steps = limits.max_steps;
  options.max_ranges = limits.max_ranges;
  options.max_read_bytes = limits.max_request_bytes;
  return options;
}

uint32_t SessionManager::Options::NegotiateChunkSize(uint32_t requested) const {
  if (requested == 0) requested = limits.chunk_size;
  return std::clamp(requested, kMinChunkSize, std::max(max_chunk_size, kMinChunkSize));
}

SessionManager::Ticket::Ticket(SessionManager* manager, std::unique_ptr<Session> session,
                               std::string id)
    : manager_(manager), session_(std::move(session)), id_(std::move(id)) {}

SessionManager::Ticket::~Ticket() {
  Listen(nullptr);
  session_.reset();  // frees every buffer the session still holds
  bool idle = false;
  {
    absl::MutexLock lock(&manager_->mu_);
    manager_->tickets_.erase(this);
    idle = manager_->active_.fetch_sub(1) == 1;
  }
  if (idle && manager_->options_.on_idle) manager_->options_.on_idle();
}

void SessionManager::Ticket::Listen(Listener* listener) {
  absl::Time drain_deadline;
  {
    absl::MutexLock lock(&manager_->mu_);
    // A call into the old listener may be running (TellAll calls outside the lock): wait.
    manager_->mu_.Await(absl::Condition(
        +[](Ticket* t) ABSL_NO_THREAD_SAFETY_ANALYSIS { return t->calls_ == 0; }, this));
    listener_ = listener;
    // A session that opened while the drain began missed its notice: it gets it now.
    if (listener == nullptr || !manager_->draining_.load()) return;
    drain_deadline = manager_->drain_deadline_;
    ++calls_;
  }
  listener->Draining(drain_deadline);
  absl::MutexLock lock(&manager_->mu_);
  --calls_;
}

void SessionManager::TellAll(absl::FunctionRef<void(Listener*)> tell) {
  std::vector<std::pair<Ticket*, Listener*>> told;
  {
    absl::MutexLock lock(&mu_);
    for (Ticket* ticket : tickets_) {
      if (ticket->listener_ == nullptr) continue;
      ++ticket->calls_;  // keeps the listener, and so the ticket, alive (see Listen)
      told.emplace_back(ticket, ticket->listener_);
    }
  }
  for (const auto& [ticket, listener] : told) tell(listener);
  absl::MutexLock lock(&mu_);
  for (const auto& [ticket, listener] : told) --ticket->calls_;
}

void SessionManager::BeginDrain(absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    drain_deadline_ = deadline;
    draining_.store(true);
  }
  TellAll([deadline](Listener* listener) { listener->Draining(deadline); });
}

bool SessionManager::WaitUntilIdle(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(
      absl::Condition(
          +[](std::atomic<uint32_t>* active) { return active->load() == 0; }, &active_),
      deadline);
}

void SessionManager::EndAll(const absl::Status& why) {
  TellAll([&why](Listener* listener) { listener->End(why); });
}

SessionManager::SessionManager(std::shared_ptr<Device> device, const Options& options)
    : device_(std::move(device)), options_(options), transfers_(options.max_transfer_bytes) {}

absl::StatusOr<std::unique_ptr<SessionManager::Ticket>> SessionManager::Open() {
  {
    absl::MutexLock lock(&mu_);
    if (draining()) {
      return absl::UnavailableError(absl::StrFormat(
          "sluiced is draining (it stops by %s): it opens no new session; connect to another "
          "daemon, or to this one once it has restarted",
          absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", drain_deadline_, absl::UTCTimeZone())));
    }
    if (active_.load() >= options_.max_sessions) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("the daemon serves at most %d sessions at once", options_.max_sessions));
    }
    active_.fetch_add(1);
  }
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(device_, SessionOptionsFor(options_.limits));
  if (!session.ok()) {
    {
      absl::MutexLock lock(&mu_);
      active_.fetch_sub(1);
    }
    if (device_->lost() && options_.on_device_lost && !lost_reported_.exchange(true)) {
      options_.on_device_lost();
    }
    return session.status();
  }
  opened_.fetch_add(1);
  // Session ids are for logs; short and unpredictable is enough.
  const std::string id = absl::StrFormat("%012x", SecureRandom64() & 0xffffffffffffull);
  std::unique_ptr<Ticket> ticket(new Ticket(this, std::move(*session), id));
  absl::MutexLock lock(&mu_);
  tickets_.insert(ticket.get());
  return ticket;
}

}  // namespace sluice
