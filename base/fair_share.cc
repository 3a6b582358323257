#include "sluice/base/fair_share.h"

#include <algorithm>
#include <chrono>

namespace sluice {
namespace {

int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// How often a waiting turn looks at its `stopped`.
constexpr absl::Duration kStopCheck = absl::Milliseconds(5);

}  // namespace

FairShare::FairShare(absl::Duration quantum, absl::Duration credit)
    : quantum_ns_(std::max<int64_t>(0, absl::ToInt64Nanoseconds(quantum))),
      credit_ns_(std::max<int64_t>(0, absl::ToInt64Nanoseconds(credit))) {}

FairShare::~FairShare() = default;

std::shared_ptr<FairShare::Member> FairShare::Join(uint32_t weight) {
  std::shared_ptr<Member> member(new Member(this));
  absl::MutexLock lock(&mu_);
  member->weight_ = std::max<uint32_t>(weight, 1);
  members_.insert(member.get());
  return member;
}

void FairShare::SetWeight(Member& member, uint32_t weight) {
  absl::MutexLock lock(&mu_);
  if (holder_ == &member && hold_started_) {
    // The hold so far is charged at the old weight; the rest at the new one.
    const int64_t now = NowNanos();
    EndHoldLocked(now);
    holder_ = &member;
    held_since_ns_ = now;
    hold_started_ = true;
    member.weight_ = std::max<uint32_t>(weight, 1);
    SetYieldLocked();
    return;
  }
  member.weight_ = std::max<uint32_t>(weight, 1);
  SetYieldLocked();
}

FairShare::Member::~Member() { share_->Leave(this); }

void FairShare::Leave(Member* m) {
  absl::MutexLock lock(&mu_);
  members_.erase(m);
  if (holder_ == m) {  // only if its owner broke the contract; keep the others going
    holder_ = nullptr;
    ScheduleLocked(NowNanos());
  } else {
    SetYieldLocked();
  }
}

int64_t FairShare::VirtualNanosLocked(const Member& m, int64_t now) const {
  return holder_ == &m && hold_started_ ? m.virtual_ns_ + (now - held_since_ns_) / m.weight_
                                        : m.virtual_ns_;
}

void FairShare::RaiseFloorLocked(int64_t now, const Member* also) {
  int64_t least = also != nullptr ? VirtualNanosLocked(*also, now) : kNever;
  for (const Member* other : members_) {
    if (other->holding_ + other->waiting_ == 0) continue;
    least = std::min(least, VirtualNanosLocked(*other, now));
  }
  if (least != kNever) floor_ns_ = std::max(floor_ns_, least);
}

void FairShare::ActivateLocked(Member& m, int64_t now) {
  RaiseFloorLocked(now, nullptr);
  m.virtual_ns_ = std::max(m.virtual_ns_, floor_ns_ - credit_ns_ / m.weight_);
}

void FairShare::SetYieldLocked() {
  if (holder_ == nullptr) return;
  int64_t owed = kNever;  // the least virtual time among the other waiting members
  for (const Member* other : members_) {
    if (other != holder_ && other->waiting_ > 0) owed = std::min(owed, other->virtual_ns_);
  }
  int64_t at = kNever;
  if (owed != kNever) {
    // The holder keeps the device for a quantum, less what it is ahead of the waiter, or until
    // it has caught up with the waiter (in its own time: virtual time times its weight).
    const int64_t behind = (owed - holder_->virtual_ns_) * holder_->weight_;
    at = held_since_ns_ +
         std::max<int64_t>(0, std::min(std::max(quantum_ns_, behind), quantum_ns_ + behind));
  }
  holder_->yield_at_ns_.store(at, std::memory_order_relaxed);
}

void FairShare::ScheduleLocked(int64_t now) {
  if (holder_ == nullptr) {
    Member* next = nullptr;
    for (Member* m : members_) {
      if (m->waiting_ == 0) continue;
      if (next == nullptr || m->virtual_ns_ < next->virtual_ns_ ||
          (m->virtual_ns_ == next->virtual_ns_ && m->arrival_ < next->arrival_)) {
        next = m;
      }
    }
    if (next == nullptr) return;
    holder_ = next;
    held_since_ns_ = now;
    hold_started_ = false;  // its clock starts when its first turn wakes and takes it
    ++holds_;
  }
  SetYieldLocked();
}

void FairShare::EndHoldLocked(int64_t now) {
  Member* m = holder_;
  RaiseFloorLocked(now, m);
  const int64_t held = hold_started_ ? now - held_since_ns_ : 0;
  m->virtual_ns_ += held / m->weight_;
  m->held_ns_ += held;
  m->yield_at_ns_.store(kNever, std::memory_order_relaxed);
  holder_ = nullptr;
}

bool FairShare::MayProceedLocked(const Member& m) const {
  if (holder_ == nullptr) return true;
  if (holder_ != &m) return false;
  // The holder's new turns wait while it is to yield, unless none of its turns holds (then
  // the waiter ends the hold itself).
  return m.holding_ == 0 || NowNanos() < m.yield_at_ns_.load(std::memory_order_relaxed);
}

bool FairShare::Turn::Acquire(absl::FunctionRef<bool()> stopped) {
  if (member_ == nullptr || held_) return true;
  FairShare& share = *member_->share_;
  Member& m = *member_;
  absl::MutexLock lock(&share.mu_);
  if (m.holding_ + m.waiting_ == 0) share.ActivateLocked(m, NowNanos());
  if (m.waiting_++ == 0) m.arrival_ = ++share.arrivals_;
  held_ = share.WaitLocked(m, stopped);
  return held_;
}

bool FairShare::WaitLocked(Member& m, absl::FunctionRef<bool()> stopped) {
  ScheduleLocked(NowNanos());
  for (;;) {
    const int64_t now = NowNanos();
    if (holder_ == nullptr) {
      ScheduleLocked(now);
      continue;
    }
    if (holder_ == &m) {
      if (!hold_started_ || now < m.yield_at_ns_.load(std::memory_order_relaxed)) break;
      if (m.holding_ == 0) {  // its quantum is spent and nothing of it runs: pass it on
        EndHoldLocked(now);
        ScheduleLocked(now);
        continue;
      }
    }
    if (stopped()) {
      if (--m.waiting_ == 0 && holder_ == &m && m.holding_ == 0) {
        EndHoldLocked(now);
        ScheduleLocked(now);
      } else {
        SetYieldLocked();  // one waiter fewer: the holder may keep the device longer
      }
      return false;
    }
    mu_.AwaitWithTimeout(
        absl::Condition(
            +[](Member* waiter) ABSL_NO_THREAD_SAFETY_ANALYSIS {
              return waiter->share_->MayProceedLocked(*waiter);
            },
            &m),
        kStopCheck);
  }
  --m.waiting_;
  ++m.holding_;
  if (!hold_started_) {
    // Charged from now, not from when it was chosen: the time its thread took to wake is not
    // the member's, and its quantum is not spent before it ran.
    hold_started_ = true;
    held_since_ns_ = NowNanos();
  }
  SetYieldLocked();
  return true;
}

bool FairShare::Turn::ShouldYield() const {
  return held_ && NowNanos() >= member_->yield_at_ns_.load(std::memory_order_relaxed);
}

bool FairShare::Turn::Yield(absl::FunctionRef<bool()> stopped) {
  if (!held_) return Acquire(stopped);
  FairShare& share = *member_->share_;
  Member& m = *member_;
  absl::MutexLock lock(&share.mu_);
  // The turn waits before it lets go, so that its member stays active: one that paused is
  // still owed what it is owed, unlike one that had gone idle.
  if (m.waiting_++ == 0) m.arrival_ = ++share.arrivals_;
  share.ReleaseLocked(m);
  held_ = share.WaitLocked(m, stopped);
  return held_;
}

void FairShare::Turn::Release() {
  if (!held_) return;
  held_ = false;
  FairShare& share = *member_->share_;
  absl::MutexLock lock(&share.mu_);
  share.ReleaseLocked(*member_);
}

void FairShare::ReleaseLocked(Member& m) {
  --m.holding_;
  if (holder_ != &m || m.holding_ > 0) return;
  const int64_t now = NowNanos();
  if (m.waiting_ == 0 || now >= m.yield_at_ns_.load(std::memory_order_relaxed)) {
    EndHoldLocked(now);
    ScheduleLocked(now);
  }
}

absl::Duration FairShare::held(const Member& member) const {
  absl::MutexLock lock(&mu_);
  return absl::Nanoseconds(member.held_ns_);
}

uint64_t FairShare::holds() const {
  absl::MutexLock lock(&mu_);
  return holds_;
}

}  // namespace sluice
