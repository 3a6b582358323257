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

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_STREAM_WATCH_H_
