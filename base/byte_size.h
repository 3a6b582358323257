// A byte count for command-line flags: "1048576", "64K", "512M", "64G", "1T" (powers of 1024).
#ifndef SLUICE_BASE_BYTE_SIZE_H_
#define SLUICE_BASE_BYTE_SIZE_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace sluice {

struct ByteSize {
  uint64_t bytes = 0;
};

// absl flag hooks: a number with an optional K, M, G or T suffix; rejects overflow.
bool AbslParseFlag(absl::string_view text, ByteSize* size, std::string* error);
std::string AbslUnparseFlag(ByteSize size);

}  // namespace sluice

#endif  // SLUICE_BASE_BYTE_SIZE_H_
