// Host memory that a daemon holds for its streams, all sessions together: uploads assembled
// from their chunks before they run, reads staged and waiting to be sent, requests waiting to
// run, replies waiting to be sent, and resumable sessions' records. A holder of a large amount
// reserves its bytes first and gets ResourceExhausted instead of memory when the budget is
// spent; bytes already in memory (a message read, a reply made) are charged, and their holder
// takes no more while the budget has no room. So no number of streams can run the daemon out
// of memory. A client's or tenant's share is a child budget: a reservation takes from both,
// and is refused by whichever is spent (a refusal by the daemon's budget through a child
// states no figures: they are everyone's). Knows nothing of gRPC.
#ifndef SLUICE_ENGINE_TRANSFER_BUDGET_H_
#define SLUICE_ENGINE_TRANSFER_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace sluice {

class TransferBudget {
 public:
  // Bytes reserved from a budget, given back when it goes (or Shrink gives some back early).
  // A hold of a child budget keeps that budget alive.
  class Hold {
   public:
    Hold() = default;
    ~Hold() { Release(); }
    Hold(Hold&& other) noexcept
        : budget_(other.budget_), bytes_(other.bytes_), keep_(std::move(other.keep_)) {
      other.budget_ = nullptr;
      other.bytes_ = 0;
    }
    Hold& operator=(Hold&& other) noexcept;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

    uint64_t bytes() const { return bytes_; }
    // Reserves `bytes` more from the same budget; ResourceExhausted (the hold unchanged) when
    // that would pass its limit. The hold must come from Reserve or Charge.
    absl::Status Extend(uint64_t bytes, const char* what);
    // Counts `bytes` more, even past the limit (see Charge). The hold must come from Reserve
    // or Charge.
    void Grow(uint64_t bytes);
    // Keeps `bytes` of the reservation (at most what it holds) and gives back the rest.
    void Shrink(uint64_t bytes);
    void Release();

   private:
    friend class TransferBudget;
    Hold(TransferBudget* budget, uint64_t bytes, std::shared_ptr<TransferBudget> keep)
        : budget_(budget), bytes_(bytes), keep_(std::move(keep)) {}
    TransferBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
    std::shared_ptr<TransferBudget> keep_;  // a child budget, kept while it holds
  };

  explicit TransferBudget(uint64_t limit) : limit_(limit) {}
  TransferBudget(const TransferBudget&) = delete;
  TransferBudget& operator=(const TransferBudget&) = delete;

  // A budget of at most `limit` bytes within `parent` (which must outlive it): `whose` and
  // `flag` name it in refusals ("this tenant's sessions", "its transfer_share").
  static std::shared_ptr<TransferBudget> Child(TransferBudget* parent, uint64_t limit,
                                               std::string whose, std::string flag);

  // Reserves `bytes` (0 is fine: a hold to Extend later); ResourceExhausted, naming `what`,
  // when that would pass the limit. Thread-safe.
  absl::StatusOr<Hold> Reserve(uint64_t bytes, const char* what);
  // Reserves `bytes` for something held long (a shared-memory region, a running execute's
  // plan) only where `room` bytes more fit too, so that the holder's streams are still read
  // while it holds them (a budget at its limit reads no more: has_room). ResourceExhausted, as
  // Reserve's, naming `what` and the bytes with the room.
  absl::StatusOr<Hold> ReserveLeaving(uint64_t bytes, uint64_t room, const char* what);
  // Counts `bytes` that are in memory already (a message read, a reply made), even past the
  // limit: their holder takes nothing more while the budget has no room (flow control), so a
  // budget is passed by at most what its holders hold at once beyond that point (one message
  // each). Thread-safe.
  Hold Charge(uint64_t bytes);
  // Whether this budget is under its limit, and every budget it is within under its limit
  // plus kChargeSlack of it: a holder that charges takes more (reads a message, makes a
  // reply) only then. So a client at its share stops, while one within its share still gets
  // its small requests read (and its large ones refused) while reservations fill the daemon.
  // Thread-safe.
  bool has_room() const;
  // Whether what this budget and every budget it is within count is at most their limits:
  // all of it could have been reserved. Thread-safe.
  bool within_limits() const;
  // Charges may take a parent budget this fraction of its limit past it (1/8); reservations
  // never do.
  static constexpr uint64_t kChargeSlackDivisor = 8;
  // The most a budget of `limit` counts at once, charges included (a holder's last message
  // and reply aside).
  static uint64_t ChargedBound(uint64_t limit) { return limit + limit / kChargeSlackDivisor; }

  uint64_t in_use() const { return in_use_.load(); }
  uint64_t limit() const { return limit_.load(); }
  // A new limit for later reservations; what is held stays held. Thread-safe.
  void set_limit(uint64_t limit) { limit_.store(limit); }

 private:
  absl::Status Take(uint64_t bytes, const char* what, bool for_child);
  void Give(uint64_t bytes);
  void Count(uint64_t bytes);  // takes `bytes` here and in every parent, past any limit

  std::atomic<uint64_t> limit_;
  std::atomic<uint64_t> in_use_{0};
  // A child's parent, the names in its refusals, and itself (for its holds to keep it).
  TransferBudget* parent_ = nullptr;
  std::string whose_ = "the daemon's sessions";
  std::string flag_ = "--max_transfer_bytes";
  std::weak_ptr<TransferBudget> self_;
};

// ---- What replies hold ----------------------------------------------------------------------

// What a reply waiting to be sent holds beyond its data: its framing, and the message, buffer
// and slice objects the transport keeps for it (MemoryBoundsTest measures it). Every reply is
// counted with it.
inline constexpr uint64_t kReplyOverheadBytes = 512;

// A read of more than a window streams: the daemon holds two windows of its replies at once,
// not all of them (server/ops/read.h). A window is kReadWindowBytes rounded down to whole
// chunks, one chunk at least.
inline constexpr uint64_t kReadWindowBytes = uint64_t{8} << 20;
uint64_t ReadWindowBytes(uint64_t chunk);

// What the replies that carry `data` bytes in chunks of `chunk` hold: the bytes, and
// kReplyOverheadBytes for each reply (one at least).
uint64_t ReplyBytes(uint64_t data, uint64_t chunk);

// The most a read of `total` bytes in chunks of `chunk` holds at once, which it reserves before
// it runs: the replies of all of it, or of two windows where it streams.
uint64_t ReadHoldBytes(uint64_t total, uint64_t chunk);

}  // namespace sluice

#endif  // SLUICE_ENGINE_TRANSFER_BUDGET_H_
