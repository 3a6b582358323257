#include "engine/transfer_budget.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace sluice {

TransferBudget::Hold& TransferBudget::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = other.budget_;
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void TransferBudget::Hold::Shrink(uint64_t bytes) {
  if (budget_ == nullptr || bytes >= bytes_) return;
  budget_->in_use_.fetch_sub(bytes_ - bytes);
  bytes_ = bytes;
}

void TransferBudget::Hold::Release() {
  if (budget_ != nullptr) budget_->in_use_.fetch_sub(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

absl::Status TransferBudget::Hold::Extend(uint64_t bytes, const char* what) {
  if (budget_ == nullptr) return absl::InternalError("extending a hold of no budget");
  if (absl::Status taken = budget_->Take(bytes, what); !taken.ok()) return taken;
  bytes_ += bytes;
  return absl::OkStatus();
}

absl::Status TransferBudget::Take(uint64_t bytes, const char* what) {
  uint64_t used = in_use_.load();
  do {
    if (bytes > limit_ - std::min(used, limit_)) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s needs %d more bytes of transfer memory, but the daemon's sessions hold %d of its "
          "%d (--max_transfer_bytes): retry, or move less per request",
          what, bytes, used, limit_));
    }
  } while (!in_use_.compare_exchange_weak(used, used + bytes));
  return absl::OkStatus();
}

absl::StatusOr<TransferBudget::Hold> TransferBudget::Reserve(uint64_t bytes, const char* what) {
  if (absl::Status taken = Take(bytes, what); !taken.ok()) return taken;
  return Hold(this, bytes);
}

}  // namespace sluice
