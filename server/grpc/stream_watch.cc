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

}  // namespace sluice
