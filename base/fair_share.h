// Device time shared out by client rather than by session. A FairShare lends the device to one
// member (a client) at a time; every turn of that member (one per session running work) may run
// together, the turns of others wait. Each member is charged the time it held the device (its
// virtual time), and when others wait the holder gives the device up, at its turns' next safe
// point, once it has held it for a quantum (less what it is ahead of the waiter owed most) and
// has caught up with that waiter: so a client with eight busy sessions gets the same share of
// the device as a client with one.
// Members may have weights: a member of weight 3 is charged a third of the time it holds, so
// against a busy member of weight 1 it gets three quarters of the device.
// A member that was idle comes back a little ahead of the least-served active member (by a
// credit), neither owed all the time it did not use nor charged for it: a client
// whose work comes in short requests with gaps between them (a solve's windows) takes the
// device at once and finishes a short request within its credit, while one that keeps the
// device busy gets no more than its share over time.
//
// The CPU device's streams take turns around kernel passes and look for the safe point between
// chunks of a pass; see Interrupt.
#ifndef SLUICE_BASE_FAIR_SHARE_H_
#define SLUICE_BASE_FAIR_SHARE_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace sluice {

class FairShare {
 public:
  class Member;

  // `quantum`: how long a member holds the device before another that is as well served may
  // have it. `credit`: how far ahead of the least-served active member one that was idle
  // comes back.
  explicit FairShare(absl::Duration quantum = absl::Milliseconds(1),
                     absl::Duration credit = absl::Milliseconds(100));
  ~FairShare();  // every member must be gone
  FairShare(const FairShare&) = delete;
  FairShare& operator=(const FairShare&) = delete;

  // A new member (a client) of `weight` (at least 1): while several members want the device,
  // each gets device time in proportion to its weight. Its sessions share it; it leaves when
  // the last reference goes, which must be after its last Turn. Thread-safe.
  std::shared_ptr<Member> Join(uint32_t weight = 1);
  // A new weight for `member`, for the time it holds from now on. Thread-safe.
  void SetWeight(Member& member, uint32_t weight) ABSL_LOCKS_EXCLUDED(mu_);

  // One session's hold on the device for one piece of work (a request). Not thread-safe: one
  // thread uses a turn, though the turns of one member may run on many threads at once.
  class Turn {
   public:
    // A turn of `member`; null: a turn that never waits (a device nobody shares).
    explicit Turn(Member* member) : member_(member) {}
    ~Turn() { Release(); }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

    // Waits until the device is lent to this turn's member (at once when it is already).
    // Gives up, returning false, once `stopped` returns true (looked at every few
    // milliseconds while waiting).
    bool Acquire(absl::FunctionRef<bool()> stopped);
    // True when the member holds the device and should give it up: its quantum is spent and
    // another member waits. Cheap (a clock read and an atomic load); any thread.
    bool ShouldYield() const;
    // Gives the device up to whoever is owed it and waits for it again (as Acquire).
    bool Yield(absl::FunctionRef<bool()> stopped);
    // Gives up the device if this turn holds it.
    void Release();
    bool held() const { return held_; }

   private:
    Member* const member_;
    bool held_ = false;
  };

  // How long `member` has held the device, over its finished holds. Thread-safe.
  absl::Duration held(const Member& member) const ABSL_LOCKS_EXCLUDED(mu_);
  // Holds begun so far: how many times the device was lent. Thread-safe.
  uint64_t holds() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class Member;
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

  // Member's time, counting the current hold of the holder.
  int64_t VirtualNanosLocked(const Member& m, int64_t now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a waiting turn of `m` may stop waiting (it holds, or may take, the device).
  bool MayProceedLocked(const Member& m) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Raises floor_ns_ to the least virtual time of the active members and `also` (if any).
  void RaiseFloorLocked(int64_t now, const Member* also) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Joins `m` to the active members (it has a turn holding or waiting).
  void ActivateLocked(Member& m, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // With no holder, lends the device to the waiting member owed most; sets when the holder
  // should yield.
  void ScheduleLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the holder's hold, charging it.
  void EndHoldLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets when the holder should yield, from the waiting members.
  void SetYieldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Leave(Member* m) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits, as a turn of `m` already counted in its waiting_, until the device is lent to `m`
  // (then counts the turn as holding) or `stopped` (then counts it as neither).
  bool WaitLocked(Member& m, absl::FunctionRef<bool()> stopped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a turn of `m` that held the device as holding no more; ends the hold when it was
  // the last and the device is owed elsewhere (or nothing of `m` waits).
  void ReleaseLocked(Member& m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t quantum_ns_;
  const int64_t credit_ns_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<Member*> members_ ABSL_GUARDED_BY(mu_);
  Member* holder_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t held_since_ns_ ABSL_GUARDED_BY(mu_) = 0;
  // Whether a turn of the holder has taken the device yet (the hold's clock runs from then).
  bool hold_started_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t arrivals_ ABSL_GUARDED_BY(mu_) = 0;  // orders members that wait equally
  uint64_t holds_ ABSL_GUARDED_BY(mu_) = 0;
  // Virtual time of the least-served active member, as last seen (it never goes back): where
  // a member coming back from idle starts, less the credit.
  int64_t floor_ns_ ABSL_GUARDED_BY(mu_) = 0;
};

class FairShare::Member {
 public:
  ~Member();
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;

 private:
  friend class FairShare;
  explicit Member(FairShare* share) : share_(share) {}

  FairShare* const share_;
  // When the holder should yield (nanoseconds since the epoch); kNever unless it holds and
  // someone waits. Read without the lock by ShouldYield.
  std::atomic<int64_t> yield_at_ns_{kNever};
  // Guarded by share_->mu_:
  int64_t weight_ = 1;      // its time is charged divided by this
  int64_t virtual_ns_ = 0;  // device time charged, adjusted when it becomes active
  int64_t held_ns_ = 0;     // device time held, over finished holds
  int holding_ = 0;         // turns that hold the device
  int waiting_ = 0;         // turns waiting for it
  uint64_t arrival_ = 0;    // when it began waiting (FairShare::arrivals_)
};

}  // namespace sluice

#endif  // SLUICE_BASE_FAIR_SHARE_H_
