#include "sluice/engine/session_manager.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "sluice/base/heap.h"
#include "sluice/base/random.h"

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
                               std::string id, Principal principal,
                               std::shared_ptr<TransferBudget> transfers)
    : manager_(manager),
      session_(std::move(session)),
      id_(std::move(id)),
      principal_(std::move(principal)),
      transfers_(std::move(transfers)) {}

SessionManager::Ticket::~Ticket() {
  Listen(nullptr);
  session_.reset();  // frees every buffer the session still holds
  bool idle = false;
  {
    absl::MutexLock lock(&manager_->mu_);
    manager_->tickets_.erase(this);
    manager_->ReleaseClientLocked(principal_.key);
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

void SessionManager::TellAll(absl::FunctionRef<void(Listener*)> tell,
                             const absl::flat_hash_set<const Ticket*>* which) {
  std::vector<std::pair<Ticket*, Listener*>> told;
  {
    absl::MutexLock lock(&mu_);
    for (Ticket* ticket : tickets_) {
      if (ticket->listener_ == nullptr) continue;
      if (which != nullptr && !which->contains(ticket)) continue;
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
    : device_(std::move(device)),
      options_(options.FollowMachine(device_->memory().total, PhysicalMemoryBytes())),
      transfers_(options_.max_transfer_bytes),
      upload_blocks_(kUploadBlockBytes, options_.max_transfer_bytes / kWarmUploadDivisor),
      device_share_(options_.share_quantum, options_.share_credit) {}

SessionManager::Options SessionManager::Options::FollowMachine(uint64_t device_bytes,
                                                               uint64_t host_bytes) const {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  Options resolved = *this;
  if (resolved.limits.memory_quota == 0) {
    resolved.limits.memory_quota = std::max<uint64_t>(device_bytes / 2, 1);
  }
  if (resolved.client_memory == 0) resolved.client_memory = resolved.limits.memory_quota;
  if (resolved.max_sessions_per_client == 0) {
    resolved.max_sessions_per_client = SessionsPerClient();
  }
  if (resolved.max_transfer_bytes == 0) {
    resolved.max_transfer_bytes = std::clamp<uint64_t>(host_bytes / 4, 256 * kMiB, 8192 * kMiB);
  }
  if (resolved.limits.max_request_bytes == 0) {
    // 4 GiB, or the most the transfer budget holds as the largest request (its bytes and a
    // chunk, or, with a small budget and chunk, a read's replies in the smallest chunks).
    const uint64_t budget = resolved.max_transfer_bytes;
    uint64_t& most = resolved.limits.max_request_bytes;
    most = std::min<uint64_t>(uint64_t{4} << 30,
                              budget > max_chunk_size ? budget - max_chunk_size : 1);
    for (uint64_t over; most > 1 && (over = resolved.LargestRequestBytes()) > budget;) {
      most -= std::min(most - 1, over - budget);
    }
  }
  if (resolved.client_transfer_bytes == 0) {
    // Half the budget, but never less than the largest request needs.
    resolved.client_transfer_bytes =
        std::min(resolved.max_transfer_bytes,
                 std::max(resolved.max_transfer_bytes / 2, resolved.LargestRequestBytes()));
  }
  return resolved;
}

absl::Status SessionManager::Options::Check() const {
  if (limits.max_request_bytes == 0) {
    return absl::InvalidArgumentError("--max_request_bytes must be at least 1");
  }
  // A daemon of no sessions would refuse every client it started for.
  if (max_sessions == 0) return absl::InvalidArgumentError("--max_sessions must be at least 1");
  if (client_transfer_bytes > max_transfer_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--client_transfer_bytes (%d) must be at most --max_transfer_bytes (%d)",
        client_transfer_bytes, max_transfer_bytes));
  }
  // The daemon's budget, and a client's share of it, each hold the largest request.
  const uint64_t largest = LargestRequestBytes();
  for (const auto& [flag, bytes] : {std::pair<const char*, uint64_t>{"--max_transfer_bytes",
                                                                      max_transfer_bytes},
                                    {"--client_transfer_bytes", client_transfer_bytes}}) {
    if (bytes < largest) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s (%d) must be at least %d, what the largest request holds: --max_request_bytes "
          "(%d) plus --max_chunk_size (%d), or a read's replies in %d-byte chunks where that "
          "is more",
          flag, bytes, largest, limits.max_request_bytes, max_chunk_size, kMinChunkSize));
    }
  }
  return absl::OkStatus();
}

uint64_t SessionManager::Options::LargestRequestBytes() const {
  return std::max(limits.max_request_bytes + max_chunk_size,
                  ReadHoldBytes(limits.max_request_bytes, kMinChunkSize));
}

uint32_t SessionManager::Options::SessionsPerClient() const {
  if (max_sessions_per_client != 0) return max_sessions_per_client;
  return std::max<uint32_t>(1, max_sessions / 4);
}

void SessionManager::ReleaseClientLocked(const std::string& client) {
  auto it = clients_.find(client);
  if (it != clients_.end() && --it->second.sessions == 0) clients_.erase(it);
}

ClientLimits SessionManager::ResolveLimits(const ClientLimits& limits) const {
  ClientLimits resolved = limits;
  if (resolved.memory == 0) resolved.memory = options_.client_memory;
  if (resolved.max_sessions == 0) resolved.max_sessions = options_.SessionsPerClient();
  if (resolved.transfer_bytes == 0) resolved.transfer_bytes = options_.client_transfer_bytes;
  resolved.transfer_bytes = std::min(resolved.transfer_bytes, transfers_.limit());
  resolved.weight = std::max<uint32_t>(resolved.weight, 1);
  return resolved;
}

void SessionManager::ApplyLimitsLocked(Client& client, const ClientLimits& limits) {
  client.limits = limits;
  client.memory->set_limit(limits.memory);
  client.transfers->set_limit(limits.transfer_bytes);
  device_share_.SetWeight(*client.device_turns, limits.weight);
}

uint32_t SessionManager::client_sessions(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  auto it = clients_.find(key);
  return it == clients_.end() ? 0 : it->second.sessions;
}

ClientUse SessionManager::client_use(const std::string& key, const ClientLimits& limits) const {
  ClientUse use;
  absl::MutexLock lock(&mu_);
  auto it = clients_.find(key);
  const ClientLimits resolved = it != clients_.end() ? it->second.limits : ResolveLimits(limits);
  use.max_sessions = resolved.max_sessions;
  use.memory_limit = resolved.memory;
  use.transfer_limit = resolved.transfer_bytes;
  use.weight = resolved.weight;
  if (it == clients_.end()) return use;
  const Client& client = it->second;
  use.sessions = client.sessions;
  use.memory_used = client.memory->used();
  use.transfer_in_use = client.transfers->in_use();
  use.device_time = device_share_.held(*client.device_turns);
  return use;
}

void SessionManager::Reauthorize(
    absl::FunctionRef<std::optional<ClientLimits>(const Principal&)> check,
    const absl::Status& why) {
  absl::flat_hash_set<const Ticket*> refused;
  {
    absl::MutexLock lock(&mu_);
    absl::flat_hash_set<std::string> updated;
    for (const Ticket* ticket : tickets_) {
      const std::optional<ClientLimits> limits = check(ticket->principal_);
      if (!limits.has_value()) {
        refused.insert(ticket);
        continue;
      }
      auto it = clients_.find(ticket->principal_.key);
      if (it != clients_.end() && updated.insert(ticket->principal_.key).second) {
        ApplyLimitsLocked(it->second, ResolveLimits(*limits));
      }
    }
  }
  if (!refused.empty()) TellAll([&why](Listener* listener) { listener->End(why); }, &refused);
}

absl::StatusOr<std::unique_ptr<SessionManager::Ticket>> SessionManager::Open(
    const Principal& who) {
  Session::Options session_options = SessionOptionsFor(options_.limits);
  const ClientLimits limits = ResolveLimits(who.limits);
  std::shared_ptr<TransferBudget> transfers;
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
    Client& holder = clients_[who.key];
    if (holder.memory == nullptr) {
      const bool tenant = !who.tenant.empty();
      holder.memory = std::make_shared<MemoryAccountant>(
          limits.memory, tenant ? "the tenant's memory quota (memory in the tenants file)"
                                : "the client's memory quota (--client_memory)");
      // Every client has a share of its own: what its streams hold is counted there, and a
      // client at its share stops being read while others go on.
      holder.transfers = TransferBudget::Child(
          &transfers_, limits.transfer_bytes,
          tenant ? "this tenant's sessions" : "this client's sessions",
          tenant ? "its transfer_share of --max_transfer_bytes" : "--client_transfer_bytes");
      holder.device_turns = device_share_.Join(limits.weight);
      holder.limits = limits;
    } else {
      ApplyLimitsLocked(holder, limits);
    }
    if (holder.sessions >= holder.limits.max_sessions) {
      const uint32_t most = holder.limits.max_sessions;
      if (holder.sessions == 0) clients_.erase(who.key);
      return absl::ResourceExhaustedError(
          who.tenant.empty()
              ? absl::StrFormat("this client already holds %d sessions, the most one client may "
                                "hold at once (--max_sessions_per_client); close one first",
                                most)
              : absl::StrFormat("this tenant already holds %d sessions, the most it may hold at "
                                "once (max_sessions in the tenants file); close one first",
                                most));
    }
    ++holder.sessions;
    session_options.table.shared_quota = holder.memory;
    session_options.table.discreet = !who.tenant.empty();
    session_options.share = holder.device_turns;
    transfers = holder.transfers;
    active_.fetch_add(1);
  }
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(device_, session_options);
  if (!session.ok()) {
    {
      absl::MutexLock lock(&mu_);
      ReleaseClientLocked(who.key);
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
  std::unique_ptr<Ticket> ticket(
      new Ticket(this, std::move(*session), id, who, std::move(transfers)));
  absl::MutexLock lock(&mu_);
  tickets_.insert(ticket.get());
  return ticket;
}

}  // namespace sluice
