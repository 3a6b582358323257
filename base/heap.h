// The process heap: what the allocator keeps after a load, given back to the system.
#ifndef SLUICE_BASE_HEAP_H_
#define SLUICE_BASE_HEAP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace sluice {

// Returns the heap's free memory to the operating system: the calling thread's cache and
// tcmalloc's page heap where the process runs on tcmalloc, glibc's free arenas (malloc_trim)
// otherwise. Thread-safe; takes the allocator's locks briefly.
void ReleaseFreeHeapMemory();

// Tells the allocator that the calling thread goes idle, so that its cache of free memory goes
// back to the shared heap (tcmalloc; nothing otherwise). For threads about to wait for work.
void ReleaseThreadHeapCache();

// The memory this process may use, in bytes: the host's physical memory, or less where the
// process's control group limits it (a container's memory limit), so that what a daemon sizes
// from the host (its transfer budget, gRPC's quota, the CPU device) and the bound it checks at
// its start follow the container rather than the node. 1 GiB where the system cannot tell.
uint64_t PhysicalMemoryBytes();

// The memory limit of the control group that `proc_self_cgroup` (the text of
// /proc/self/cgroup) names under `cgroup_root` (/sys/fs/cgroup): cgroup v2's memory.max, or
// v1's memory.limit_in_bytes under the memory hierarchy, read at the group and each of its
// parents (the lowest applies). nullopt where none is set ("max", or v1's unlimited value) or
// none can be read.
std::optional<uint64_t> CgroupMemoryLimit(std::string_view proc_self_cgroup,
                                          const std::string& cgroup_root);

// The process's resident set size in bytes (0 where /proc cannot tell).
uint64_t ResidentBytes();
// The most the program's resident set has been since it began, in bytes (/proc's VmHWM; 0
// where the system cannot tell).
uint64_t PeakResidentBytes();

// Gives the heap's free memory back to the system `delay` after the last Poke: late enough to
// catch the frees that follow the event that poked it (a connection's buffers go after its
// session), and once for a burst of pokes. Its own thread; thread-safe.
class HeapTrimmer {
 public:
  explicit HeapTrimmer(absl::Duration delay);
  // Stops the thread (a pending trim is dropped).
  ~HeapTrimmer();
  HeapTrimmer(const HeapTrimmer&) = delete;
  HeapTrimmer& operator=(const HeapTrimmer&) = delete;

  void Poke() ABSL_LOCKS_EXCLUDED(mu_);
  // Trims done so far (for tests).
  uint64_t trims() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Duration delay_;
  mutable absl::Mutex mu_;
  bool pending_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time due_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t trims_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: starts once the state above exists
};

}  // namespace sluice

#endif  // SLUICE_BASE_HEAP_H_
