#include "sluice/engine/transfer_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace sluice {

TransferBudget::Hold& TransferBudget::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = other.budget_;
    bytes_ = other.bytes_;
    keep_ = std::move(other.keep_);
    other.budget_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void TransferBudget::Hold::Shrink(uint64_t bytes) {
  if (budget_ == nullptr || bytes >= bytes_) return;
  budget_->Give(bytes_ - bytes);
  bytes_ = bytes;
}

void TransferBudget::Hold::Release() {
  if (budget_ != nullptr) budget_->Give(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
  keep_.reset();
}

absl::Status TransferBudget::Hold::Extend(uint64_t bytes, const char* what) {
  if (budget_ == nullptr) return absl::InternalError("extending a hold of no budget");
  if (absl::Status taken = budget_->Take(bytes, what, false); !taken.ok()) return taken;
  bytes_ += bytes;
  return absl::OkStatus();
}

void TransferBudget::Hold::Grow(uint64_t bytes) {
  if (budget_ == nullptr) return;
  budget_->Count(bytes);
  bytes_ += bytes;
}

std::shared_ptr<TransferBudget> TransferBudget::Child(TransferBudget* parent, uint64_t limit,
                                                      std::string whose, std::string flag) {
  auto child = std::make_shared<TransferBudget>(limit);
  child->parent_ = parent;
  child->whose_ = std::move(whose);
  child->flag_ = std::move(flag);
  child->self_ = child;
  return child;
}

void TransferBudget::Give(uint64_t bytes) {
  in_use_.fetch_sub(bytes);
  if (parent_ != nullptr) parent_->Give(bytes);
}

absl::Status TransferBudget::Take(uint64_t bytes, const char* what, bool for_child) {
  const uint64_t limit = limit_.load();
  uint64_t used = in_use_.load();
  do {
    if (bytes > limit - std::min(used, limit)) {
      if (for_child) {
        // Everyone's figures: a tenant hears only that the daemon has none to spare.
        return absl::ResourceExhaustedError(absl::StrFormat(
            "%s needs %d more bytes of transfer memory, and the daemon has none to spare now "
            "(--max_transfer_bytes): retry, or move less per request",
            what, bytes));
      }
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s needs %d more bytes of transfer memory, but %s hold %d of %d (%s): retry, or "
          "move less per request",
          what, bytes, whose_, used, limit, flag_));
    }
  } while (!in_use_.compare_exchange_weak(used, used + bytes));
  if (parent_ != nullptr) {
    if (absl::Status taken = parent_->Take(bytes, what, true); !taken.ok()) {
      in_use_.fetch_sub(bytes);
      return taken;
    }
  }
  return absl::OkStatus();
}

void TransferBudget::Count(uint64_t bytes) {
  in_use_.fetch_add(bytes);
  if (parent_ != nullptr) parent_->Count(bytes);
}

TransferBudget::Hold TransferBudget::Charge(uint64_t bytes) {
  Count(bytes);
  return Hold(this, bytes, self_.lock());
}

bool TransferBudget::has_room() const {
  if (in_use_.load() >= limit_.load()) return false;
  for (const TransferBudget* budget = parent_; budget != nullptr; budget = budget->parent_) {
    if (budget->in_use_.load() >= ChargedBound(budget->limit_.load())) return false;
  }
  return true;
}

absl::StatusOr<TransferBudget::Hold> TransferBudget::Reserve(uint64_t bytes, const char* what) {
  if (absl::Status taken = Take(bytes, what, false); !taken.ok()) return taken;
  return Hold(this, bytes, self_.lock());
}

absl::StatusOr<TransferBudget::Hold> TransferBudget::ReserveLeaving(uint64_t bytes,
                                                                    uint64_t room,
                                                                    const char* what) {
  absl::StatusOr<Hold> hold = Reserve(bytes + room, what);
  if (hold.ok()) hold->Shrink(bytes);
  return hold;
}

bool TransferBudget::within_limits() const {
  for (const TransferBudget* budget = this; budget != nullptr; budget = budget->parent_) {
    if (budget->in_use_.load() > budget->limit_.load()) return false;
  }
  return true;
}

uint64_t ReadWindowBytes(uint64_t chunk) {
  return std::max<uint64_t>(1, kReadWindowBytes / chunk) * chunk;
}

uint64_t ReplyBytes(uint64_t data, uint64_t chunk) {
  const uint64_t replies = std::max<uint64_t>(1, data / chunk + (data % chunk != 0));
  return data + replies * kReplyOverheadBytes;
}

uint64_t ReadHoldBytes(uint64_t total, uint64_t chunk) {
  return ReplyBytes(std::min(total, 2 * ReadWindowBytes(chunk)), chunk);
}

}  // namespace sluice
