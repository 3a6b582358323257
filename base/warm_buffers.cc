#include "sluice/base/warm_buffers.h"

#include <utility>

#include "sluice/base/status_macros.h"

namespace sluice {

WarmBuffers::WarmBuffers(size_t buffer_bytes, uint64_t limit)
    : buffer_bytes_(buffer_bytes), limit_(limit), shelf_(std::make_shared<Shelf>()) {
  absl::MutexLock lock(&shelf_->mu);
  shelf_->limit = limit;
}

WarmBuffers::~WarmBuffers() {
  std::deque<Kept> freed;  // unmapped outside the lock, as it goes
  absl::MutexLock lock(&shelf_->mu);
  shelf_->limit = 0;
  shelf_->kept_bytes = 0;
  freed.swap(shelf_->kept);
}

absl::StatusOr<WarmBuffers::Lease> WarmBuffers::Take() {
  Lease lease;
  {
    absl::MutexLock lock(&shelf_->mu);
    if (!shelf_->kept.empty()) {
      lease.buffer_ = std::move(shelf_->kept.back().buffer);
      shelf_->kept.pop_back();
      shelf_->kept_bytes -= buffer_bytes_;
      ++shelf_->reused;
      lease.warm_ = true;
    }
  }
  if (!lease.warm_) {
    ASSIGN_OR_RETURN(lease.buffer_, MappedBuffer::Allocate(buffer_bytes_, /*huge_pages=*/true));
  }
  lease.shelf_ = shelf_;
  return lease;
}

void WarmBuffers::Expire(absl::Time cutoff) {
  std::deque<Kept> freed;  // unmapped outside the lock, as it goes
  absl::MutexLock lock(&shelf_->mu);
  while (!shelf_->kept.empty() && shelf_->kept.front().since < cutoff) {
    freed.push_back(std::move(shelf_->kept.front()));
    shelf_->kept.pop_front();
    shelf_->kept_bytes -= buffer_bytes_;
  }
}

uint64_t WarmBuffers::kept_bytes() const {
  absl::MutexLock lock(&shelf_->mu);
  return shelf_->kept_bytes;
}

uint64_t WarmBuffers::reused() const {
  absl::MutexLock lock(&shelf_->mu);
  return shelf_->reused;
}

WarmBuffers::Lease& WarmBuffers::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Return();
    buffer_ = std::move(other.buffer_);
    shelf_ = std::move(other.shelf_);
    warm_ = other.warm_;
  }
  return *this;
}

void WarmBuffers::Lease::Return() {
  if (shelf_ == nullptr) return;
  const std::shared_ptr<Shelf> shelf = std::move(shelf_);
  MappedBuffer buffer = std::move(buffer_);  // freed here, outside the lock, unless kept
  const uint64_t bytes = buffer.size();
  absl::MutexLock lock(&shelf->mu);
  if (bytes > 0 && shelf->kept_bytes + bytes <= shelf->limit) {
    shelf->kept.push_back(Kept{std::move(buffer), absl::Now()});
    shelf->kept_bytes += bytes;
  }
}

}  // namespace sluice
