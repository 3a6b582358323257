#include "sluice/server/grpc/stream_watch.h"

#include "absl/time/clock.h"

namespace sluice {

StreamWatch::StreamWatch(absl::Duration period)
    : period_(period), thread_([this] { Run(); }) {}

StreamWatch::~StreamWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void StreamWatch::Add(Watched* watched) {
  absl::MutexLock lock(&mu_);
  watched_.insert(watched);
}

void StreamWatch::Remove(Watched* watched) {
  absl::MutexLock lock(&mu_);  // a Tick runs under this lock: none runs once it is held
  watched_.erase(watched);
}

void StreamWatch::Run() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), period_);
    if (stopping_) break;
    const absl::Time now = absl::Now();
    for (Watched* watched : watched_) watched->Tick(now);
  }
}

RoomWatch::RoomWatch(absl::Duration period) : period_(period), thread_([this] { Run(); }) {}

RoomWatch::~RoomWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void RoomWatch::Add(Waiter* waiter) {
  absl::MutexLock lock(&mu_);
  waiters_.insert(waiter);
}

void RoomWatch::Remove(Waiter* waiter) {
  absl::MutexLock lock(&mu_);  // a RoomTick runs under this lock: none runs once it is held
  waiters_.erase(waiter);
}

void RoomWatch::Wake() {
  absl::MutexLock lock(&mu_);
  waiting_ = true;
}

void RoomWatch::Run() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    mu_.Await(absl::Condition(this, &RoomWatch::Woken));
    if (stopping_) break;
    bool still = false;
    for (Waiter* waiter : waiters_) still = waiter->RoomTick() || still;
    waiting_ = still;
    if (still) mu_.AwaitWithTimeout(absl::Condition(&stopping_), period_);
  }
}

}  // namespace sluice
