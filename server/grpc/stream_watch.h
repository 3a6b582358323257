// A thread that looks at every live stream once a period, so that each can enforce its own
// timeouts (a stream that never opens, an idle session, a stalled upload, replies its client
// does not read) without a timer of its own.
#ifndef SLUICE_SERVER_GRPC_STREAM_WATCH_H_
#define SLUICE_SERVER_GRPC_STREAM_WATCH_H_

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace sluice {

class StreamWatch {
 public:
  class Watched {
   public:
    virtual ~Watched() = default;
    // Called once a period, with the watch's lock held: must return promptly, must not block,
    // and must not call back into the watch.
    virtual void Tick(absl::Time now) = 0;
  };

  explicit StreamWatch(absl::Duration period);
  // Stops the thread. Nothing may be watched any more.
  ~StreamWatch();
  StreamWatch(const StreamWatch&) = delete;
  StreamWatch& operator=(const StreamWatch&) = delete;

  void Add(Watched* watched) ABSL_LOCKS_EXCLUDED(mu_);
  // Returns once no Tick of `watched` runs, so that it may then be destroyed.
  void Remove(Watched* watched) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Duration period_;
  absl::Mutex mu_;
  absl::flat_hash_set<Watched*> watched_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the state above exists
};

// A thread that, while some stream waits for room in its transfer budget (flow control: a
// client at its share is not read), looks at every registered stream once a short period, so
// that a stream reads again soon after room appears; it sleeps while no stream waits. Streams
// register for their whole life (as with StreamWatch), so that a tick never meets one gone.
class RoomWatch {
 public:
  class Waiter {
   public:
    virtual ~Waiter() = default;
    // Called once a period while some stream waits, with the watch's lock held: must return
    // promptly, must not block, must not call back into the watch; true while it still waits.
    virtual bool RoomTick() = 0;
  };

  explicit RoomWatch(absl::Duration period);
  // Stops the thread. Nothing may be registered any more.
  ~RoomWatch();
  RoomWatch(const RoomWatch&) = delete;
  RoomWatch& operator=(const RoomWatch&) = delete;

  void Add(Waiter* waiter) ABSL_LOCKS_EXCLUDED(mu_);
  // Returns once no RoomTick of `waiter` runs, so that it may then be destroyed.
  void Remove(Waiter* waiter) ABSL_LOCKS_EXCLUDED(mu_);
  // Some stream began to wait: the ticks resume. Takes the watch's lock, so never called under
  // a lock a RoomTick takes.
  void Wake() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  bool Woken() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return waiting_ || stopping_; }

  const absl::Duration period_;
  absl::Mutex mu_;
  absl::flat_hash_set<Waiter*> waiters_ ABSL_GUARDED_BY(mu_);
  bool waiting_ ABSL_GUARDED_BY(mu_) = false;  // some stream may wait
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the state above exists
};

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_STREAM_WATCH_H_
