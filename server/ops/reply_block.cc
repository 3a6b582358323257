#include "sluice/server/ops/reply_block.h"

#include <algorithm>

namespace sluice {

ReplyBlock::ReplyBlock(uint64_t base, uint64_t length, uint64_t chunk)
    : bytes_(new uint8_t[length]), base_(base), length_(length), chunk_(chunk) {}

absl::Span<const uint8_t> ReplyBlock::PieceAt(uint64_t offset) const {
  if (bytes_ == nullptr || offset < base_ || offset - base_ >= length_ ||
      (offset - base_) % chunk_ != 0) {
    return {};
  }
  const uint64_t at = offset - base_;
  return {bytes_.get() + at, std::min(chunk_, length_ - at)};
}

}  // namespace sluice
