#include "sluice/server/grpc/resumable_sessions.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "sluice/base/random.h"
#include "sluice/server/grpc/reply_codec.h"

namespace sluice {

// ---- ReplyRecord ------------------------------------------------------------------------------

void ReplyRecord::Add(uint64_t id, const std::vector<grpc::ByteBuffer>& replies, bool read_only,
                      SharedHold counted, TransferBudget& budget) {
  // Sized as the replies are counted while they wait to be sent (their copies share the slices).
  const uint64_t size = HeldBytes(replies);
  absl::MutexLock lock(&mu_);
  last_completed_ = std::max(last_completed_, id);
  if (auto again = entries_.find(id); again != entries_.end()) {
    Forget(again->second);  // an id given twice: the last replies stand
  } else if (entries_.size() >= kMaxEntries) {
    Forget(entries_.begin()->second);
    entries_.erase(entries_.begin());
  }
  Entry entry;
  if (entries_.size() >= kFreeEntries) entry.entry = budget.Charge(kEntryBytes);
  entry.read_only = read_only;
  if (read_only) {
    // A read is run again instead (see Resend): nothing of its replies is held.
    entry.kept = false;
    entries_[id] = std::move(entry);
    return;
  }
  last_writer_ = std::max(last_writer_, id);
  if (size <= kSmallBytes && small_bytes_ + size <= kMaxSmallBytes) {
    // Small replies (a status, a handle) are kept up to a bound however full the budget is,
    // counted to the session's client all the same.
    entry.replies = replies;
    entry.counted = std::move(counted);
    entry.small = true;
    small_bytes_ += size;
    bytes_ += size;
    entries_[id] = std::move(entry);
    return;
  }
  // Room first: the oldest replies go (most likely settled already, unacknowledged).
  for (auto it = entries_.begin();
       size <= kMaxBytes && bytes_ + size > kMaxBytes && it != entries_.end(); ++it) {
    Forget(it->second);
  }
  // Counted already, they are kept where the budget could have reserved them: kept past the
  // send, they must not take a client past its share.
  if (size <= kMaxBytes && budget.within_limits()) {
    entry.replies = replies;  // shares the slices
    entry.counted = std::move(counted);
    bytes_ += size;
  } else {
    entry.kept = false;
  }
  entries_[id] = std::move(entry);
}

void ReplyRecord::Forget(Entry& entry) {
  const uint64_t size = HeldBytes(entry.replies);
  bytes_ -= size;
  if (entry.small) small_bytes_ -= size;
  entry.replies.clear();
  entry.counted.reset();  // their bytes stay counted while a stream still sends them
  entry.kept = false;
  entry.small = false;
}

void ReplyRecord::Settle(uint64_t through) {
  absl::MutexLock lock(&mu_);
  for (auto it = entries_.begin(); it != entries_.end() && it->first <= through;) {
    Forget(it->second);
    it = entries_.erase(it);
  }
}

ReplyRecord::Answer ReplyRecord::Resend(uint64_t id) const {
  Answer answer;
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) {
    answer.kind = Answer::kLost;
  } else if (it->second.kept) {
    answer.kind = Answer::kReplay;
    answer.replies = it->second.replies;
    answer.counted = it->second.counted;
  } else {
    // A read changes nothing: when only reads completed after it, running it again gives its
    // answer.
    answer.kind = it->second.read_only && id > last_writer_ ? Answer::kRun : Answer::kLost;
  }
  return answer;
}

uint64_t ReplyRecord::last_completed() const {
  absl::MutexLock lock(&mu_);
  return last_completed_;
}

uint64_t ReplyRecord::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

size_t ReplyRecord::entries() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

// ---- ResumableSessions ------------------------------------------------------------------------

ResumableSessions::~ResumableSessions() { DropAll(); }

std::string ResumableSessions::Register(const std::string& owner, const std::string& credential,
                                        const std::string& client, Holder* holder) {
  std::string token = RandomHexId() + RandomHexId();
  absl::MutexLock lock(&mu_);
  entries_[token] =
      Entry{.owner = owner, .credential = credential, .client = client, .holder = holder};
  return token;
}

std::optional<ResumableSessions::Parked> ResumableSessions::Evict(const std::string* client) {
  absl::MutexLock lock(&mu_);
  auto oldest = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (!it->second.parked.has_value()) continue;
    if (client != nullptr && it->second.client != *client) continue;
    // Every grace is the same: the one that ends first was parked first.
    if (oldest == entries_.end() || it->second.expires < oldest->second.expires) oldest = it;
  }
  if (oldest == entries_.end()) return std::nullopt;
  Parked parked = *std::move(oldest->second.parked);
  entries_.erase(oldest);
  return parked;
}

void ResumableSessions::DropRevoked(
    absl::FunctionRef<bool(const std::string& owner, const std::string& credential)> revoked) {
  std::vector<Parked> freed;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.parked.has_value() && revoked(it->second.owner, it->second.credential)) {
        freed.push_back(*std::move(it->second.parked));
        entries_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  Free(std::move(freed),
       "the daemon's tenants file, reloaded, no longer lists its tenant or the token it opened "
       "with");
}

void ResumableSessions::Park(const std::string& token, Parked parked) {
  std::vector<Parked> freed;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(token);
    if (it == entries_.end() || dropping_) {
      if (it != entries_.end()) entries_.erase(it);
      freed.push_back(std::move(parked));
    } else {
      it->second.holder = nullptr;
      it->second.letting_go = false;
      it->second.parked = std::move(parked);
      it->second.expires = absl::Now() + grace_;
    }
  }
  Free(std::move(freed), "its stream broke while the daemon drains");
}

void ResumableSessions::Forget(const std::string& token) {
  std::vector<Parked> freed;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(token);
    if (it == entries_.end()) return;
    if (it->second.parked.has_value()) freed.push_back(*std::move(it->second.parked));
    entries_.erase(it);
  }
  Free(std::move(freed), "closed");
}

absl::StatusOr<ResumableSessions::Parked> ResumableSessions::Take(const std::string& token,
                                                                 const std::string& owner,
                                                                 Holder* holder,
                                                                 absl::Duration wait) {
  const absl::Status not_found = absl::NotFoundError(
      "no session waits to be resumed under this token (its grace ended, it was closed, it "
      "gave its place to a new session while the daemon was full, or the token is not this "
      "tenant's)");
  const absl::Time deadline = absl::Now() + wait;
  absl::MutexLock lock(&mu_);
  {
    auto it = entries_.find(token);
    if (it == entries_.end() || it->second.owner != owner || dropping_) return not_found;
    if (it->second.resume_waits) {
      return absl::UnavailableError(
          "another stream is resuming this session now; resume again once it has");
    }
    it->second.resume_waits = true;
    if (!it->second.parked.has_value() && !it->second.letting_go &&
        it->second.holder != nullptr) {
      // Under the lock, so that the holder cannot park and go meanwhile (LetGo does not block
      // and does not call back). It parks the session once its running request is done.
      it->second.letting_go = true;
      it->second.holder->LetGo();
    }
  }
  const auto parked = [this, &token]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = entries_.find(token);
    return it == entries_.end() || it->second.parked.has_value();
  };
  mu_.AwaitWithDeadline(absl::Condition(&parked), deadline);
  auto it = entries_.find(token);
  if (it != entries_.end()) it->second.resume_waits = false;
  if (it == entries_.end() || it->second.owner != owner || dropping_) return not_found;
  if (!it->second.parked.has_value()) {
    return absl::UnavailableError(absl::StrFormat(
        "the session is still busy on its previous stream after %s; resume again",
        absl::FormatDuration(wait)));
  }
  Parked taken = *std::move(it->second.parked);
  it->second.parked.reset();
  it->second.holder = holder;
  it->second.expires = absl::InfiniteFuture();
  return taken;
}

void ResumableSessions::DropAll() {
  std::vector<Parked> freed;
  {
    absl::MutexLock lock(&mu_);
    dropping_ = true;
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.parked.has_value()) {
        freed.push_back(*std::move(it->second.parked));
        entries_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  Free(std::move(freed), "the daemon drains: no session can be resumed");
}

size_t ResumableSessions::parked() const {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [token, entry] : entries_) n += entry.parked.has_value() ? 1 : 0;
  return n;
}

void ResumableSessions::Tick(absl::Time now) {
  std::vector<Parked> freed;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.parked.has_value() && now >= it->second.expires) {
        freed.push_back(*std::move(it->second.parked));
        entries_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  Free(std::move(freed), "its client did not come back within the resume grace");
}

void ResumableSessions::Free(std::vector<Parked> parked, const char* why) {
  for (Parked& p : parked) {
    if (p.carried != nullptr) p.carried->Log(why);
    executor_->Schedule([p = std::move(p)]() mutable { p = Parked(); });
  }
}

}  // namespace sluice
