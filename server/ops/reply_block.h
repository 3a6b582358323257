// The bytes of a read's data replies, in one block: the device copies straight into it, and the
// transport sends each reply's piece from it, uncopied. Replies made so hold their bytes and
// nothing more, where a string of their own per reply held what the allocator rounds it up to
// as well (a 16 KiB chunk's string took 20 KiB).
#ifndef SLUICE_SERVER_OPS_REPLY_BLOCK_H_
#define SLUICE_SERVER_OPS_REPLY_BLOCK_H_

#include <cstdint>
#include <memory>

#include "absl/types/span.h"

namespace sluice {

class ReplyBlock {
 public:
  // No block: replies carry their own bytes.
  ReplyBlock() = default;
  // A block for the bytes [base, base + length) of a read, in replies of `chunk` bytes (the
  // last may be shorter), each named by where its bytes begin in the read. Not initialized.
  ReplyBlock(uint64_t base, uint64_t length, uint64_t chunk);

  explicit operator bool() const { return bytes_ != nullptr; }
  // All of it, for the device to fill.
  absl::Span<uint8_t> bytes() const { return {bytes_.get(), length_}; }
  // The bytes of the reply whose data begins at `offset` of the read; empty when that is not
  // a reply of this block.
  absl::Span<const uint8_t> PieceAt(uint64_t offset) const;
  // Shares the block with the holder of a piece: it lives while any holder does.
  const std::shared_ptr<uint8_t[]>& owner() const { return bytes_; }

 private:
  std::shared_ptr<uint8_t[]> bytes_;
  uint64_t base_ = 0;
  uint64_t length_ = 0;
  uint64_t chunk_ = 1;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_OPS_REPLY_BLOCK_H_
