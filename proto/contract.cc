#include "sluice/proto/contract.h"

#include "absl/strings/str_format.h"

namespace sluice {

absl::Status CheckRange(uint64_t size, uint64_t offset, uint64_t length) {
  if (offset > size || length > size - offset) {
    return absl::OutOfRangeError(absl::StrFormat(
        "the range at offset %d of length %d is outside the buffer of %d bytes", offset, length,
        size));
  }
  return absl::OkStatus();
}

}  // namespace sluice
