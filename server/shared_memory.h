// The same-host data path: memory a client on the daemon's host shares with it, so that large
// uploads and reads cost no trip through the stream. The client makes the memory (a memfd,
// sealed against shrinking and growing, so the daemon can never fault on a page that went) and
// passes its file descriptor over a Unix socket (SCM_RIGHTS) with the token its open's reply
// offered; no named segment exists that anyone else could open. An upload then names a span of
// the region instead of carrying data, and a read may land in one. See sluice.proto
// (SharedMemoryOffer) for the wire. A region counts its size to its session's client's share of
// the transfer budget for as long as the daemon maps it: its pages stay while the daemon does
// (a parked session's for its grace), and a read into pages the client never touched has the
// daemon bring them in.
#ifndef SLUICE_SERVER_SHARED_MEMORY_H_
#define SLUICE_SERVER_SHARED_MEMORY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sluice/engine/transfer_budget.h"

namespace sluice {

// A client's memfd, mapped. Unmapped when the last user lets go.
class SharedRegion {
 public:
  // Maps `fd` (taken: closed here whatever happens) read-write. FailedPrecondition unless it
  // is a memfd sealed with F_SEAL_SHRINK and F_SEAL_GROW; InvalidArgument for an empty one;
  // ResourceExhausted past `max_bytes`.
  static absl::StatusOr<std::shared_ptr<SharedRegion>> Map(int fd, uint64_t max_bytes);
  ~SharedRegion();
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;

  absl::Span<uint8_t> bytes() const { return {data_, size_}; }
  // Keeps `hold` (what the region counts) until the region is unmapped.
  void Count(TransferBudget::Hold hold) { hold_ = std::move(hold); }

  // The bytes [offset, offset + length) of a region of `size` bytes, or OutOfRange saying why.
  static absl::Status CheckSpan(uint64_t size, uint64_t offset, uint64_t length);

 private:
  SharedRegion(uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  TransferBudget::Hold hold_;  // given back once unmapped (members go after the destructor)
  uint8_t* const data_;
  const uint64_t size_;
};

// A session's region: none until its client attaches one; each attach replaces the last.
// Thread-safe.
class SharedSlot {
 public:
  // Regions attached count their size to `budget` (the session's client's share; null: they
  // count nowhere), each only where `room` bytes more fit too (a chunk: see ReserveLeaving).
  explicit SharedSlot(std::shared_ptr<TransferBudget> budget = nullptr, uint64_t room = 0)
      : budget_(std::move(budget)), room_(room) {}
  TransferBudget* budget() const { return budget_.get(); }
  uint64_t room() const { return room_; }

  void Attach(std::shared_ptr<SharedRegion> region) ABSL_LOCKS_EXCLUDED(mu_);
  // The region now (null: none attached). Its holder keeps it mapped.
  std::shared_ptr<SharedRegion> region() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::shared_ptr<TransferBudget> budget_;
  const uint64_t room_;
  mutable absl::Mutex mu_;
  std::shared_ptr<SharedRegion> region_ ABSL_GUARDED_BY(mu_);
};

// The daemon's end of the path: a Unix socket (mode 0660, as the daemon's own) on which
// clients attach regions to the sessions whose tokens they hold. Each connection carries one
// attach: the token's kSharedMemoryTokenBytes bytes with one file descriptor, answered with a
// line, "OK" or "ERR <canonical code> <why>". A connection that sends nothing within a second is dropped.
class SharedRegions {
 public:
  // A connection to the socket sends its attach within this many seconds of connecting, or is
  // told DEADLINE_EXCEEDED and closed.
  static constexpr int kAttachSeconds = 1;
  // Serves `path` (claimed as the daemon's main socket is: see ClaimUnixSocketPath); regions
  // of at most `max_bytes`.
  static absl::StatusOr<std::unique_ptr<SharedRegions>> Listen(const std::string& path,
                                                               uint64_t max_bytes);
  // Stops serving (attaches under way finish first) and removes the socket.
  ~SharedRegions();
  SharedRegions(const SharedRegions&) = delete;
  SharedRegions& operator=(const SharedRegions&) = delete;

  // A new offer: the token that attaches a region to `slot`, valid while the slot lives.
  std::string Offer(const std::shared_ptr<SharedSlot>& slot) ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& path() const { return path_; }
  uint64_t max_bytes() const { return max_bytes_; }

  // Connections handled at once; more wait to be accepted.
  static constexpr int kMaxConnections = 16;

 private:
  SharedRegions(std::string path, uint64_t max_bytes, int listener, int stop_read,
                int stop_write);
  void Serve();
  // Handles one attach on `connection` (closed here), on its own thread.
  void Attach(int connection);
  // The answer to an attach of `fd` with `token`: ResourceExhausted where the region's size
  // does not fit its client's share (the region before it stays attached).
  absl::Status AttachWith(const std::string& token, int fd) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string path_;
  const uint64_t max_bytes_;
  const int listener_;
  const int stop_read_, stop_write_;  // a pipe that wakes the serving thread to stop
  uint64_t inode_ = 0;                // of the socket, removed only if still this one
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::weak_ptr<SharedSlot>> offers_ ABSL_GUARDED_BY(mu_);
  int connections_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_SHARED_MEMORY_H_
