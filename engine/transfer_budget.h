// Host memory that a daemon holds for transfers in flight, all sessions together: uploads
// assembled from their chunks before they run, and reads staged and waiting to be sent. Each
// holder reserves its bytes first and gets ResourceExhausted instead of memory when the
// budget is spent, so no number of streams can run the daemon out of memory. A tenant's share
// is a child budget: a reservation takes from both, and is refused by whichever is spent (a
// refusal by the daemon's budget through a child states no figures: they are everyone's).
// Knows nothing of gRPC.
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
    // that would pass its limit. The hold must come from Reserve.
    absl::Status Extend(uint64_t bytes, const char* what);
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

  uint64_t in_use() const { return in_use_.load(); }
  uint64_t limit() const { return limit_.load(); }
  // A new limit for later reservations; what is held stays held. Thread-safe.
  void set_limit(uint64_t limit) { limit_.store(limit); }

 private:
  absl::Status Take(uint64_t bytes, const char* what, bool for_child);
  void Give(uint64_t bytes);

  std::atomic<uint64_t> limit_;
  std::atomic<uint64_t> in_use_{0};
  // A child's parent, the names in its refusals, and itself (for its holds to keep it).
  TransferBudget* parent_ = nullptr;
  std::string whose_ = "the daemon's sessions";
  std::string flag_ = "--max_transfer_bytes";
  std::weak_ptr<TransferBudget> self_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_TRANSFER_BUDGET_H_
