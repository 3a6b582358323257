#include "engine/session_manager.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
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
  session_.reset();  // frees every buffer the session still holds
  if (manager_->active_.fetch_sub(1) == 1 && manager_->options_.on_idle) {
    manager_->options_.on_idle();
  }
}

SessionManager::SessionManager(std::shared_ptr<Device> device, const Options& options)
    : device_(std::move(device)), options_(options), transfers_(options.max_transfer_bytes) {}

absl::StatusOr<std::unique_ptr<SessionManager::Ticket>> SessionManager::Open() {
  if (draining()) return absl::UnavailableError("the daemon is draining; no new sessions");
  uint32_t active = active_.load();
  do {
    if (active >= options_.max_sessions) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("the daemon serves at most %d sessions at once", options_.max_sessions));
    }
  } while (!active_.compare_exchange_weak(active, active + 1));
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(device_, SessionOptionsFor(options_.limits));
  if (!session.ok()) {
    active_.fetch_sub(1);
    if (device_->lost() && options_.on_device_lost && !lost_reported_.exchange(true)) {
      options_.on_device_lost();
    }
    return session.status();
  }
  opened_.fetch_add(1);
  // Session ids are for logs; short and unpredictable is enough.
  const std::string id = absl::StrFormat("%012x", SecureRandom64() & 0xffffffffffffull);
  return std::unique_ptr<Ticket>(new Ticket(this, std::move(*session), id));
}

}  // namespace sluice
