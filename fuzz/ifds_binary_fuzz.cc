// The IFDS binary format's parser on arbitrary bytes: it returns a problem or an error, never
// crashes or allocates what the input merely claims, and what it accepts writes back to bytes
// that parse to the same problem.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sluice/ifds/binary_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<sluice::ifds::Problem> problem = sluice::ifds::ParseBinary(bytes, "fuzz.ifdsb");
  if (!problem.ok()) {
    if (problem.status().message().empty()) std::abort();  // every refusal says why
    return 0;
  }
  const std::string written = sluice::ifds::WriteBinary(*problem);
  absl::StatusOr<sluice::ifds::Problem> again = sluice::ifds::ParseBinary(written, "again.ifdsb");
  if (!again.ok() || sluice::ifds::WriteBinary(*again) != written) std::abort();
  return 0;
}
