// The IFDS text format's parser on arbitrary bytes: it returns a problem or an error, never
// crashes, and what it accepts writes back to text that parses to the same problem. Read in
// small stretches on two threads with the text given back and reloaded as it goes (a client's
// reading, LoadOptions::reread), and read statement by statement without the fast way, it
// gives the same answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sluice/ifds/text_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<sluice::ifds::Problem> problem = sluice::ifds::ParseText(text, "fuzz.ifds");
  const absl::StatusOr<sluice::ifds::Problem> reread =
      sluice::ifds::internal::ParseTextOverwritingConsumed(text, "fuzz.ifds", 64, 2, true);
  if (reread.status() != problem.status()) std::abort();
  // The statement-by-statement reading, with none of the fast way's shortcuts: the same
  // answer, or the same error at the same place.
  const absl::StatusOr<sluice::ifds::Problem> slow =
      sluice::ifds::internal::ParseTextStatementByStatement(text, "fuzz.ifds");
  if (slow.status() != problem.status()) std::abort();
  if (slow.ok() && sluice::ifds::WriteText(*slow) != sluice::ifds::WriteText(*problem)) {
    std::abort();
  }
  if (!problem.ok()) {
    if (problem.status().message().empty()) std::abort();  // every refusal says why
    return 0;
  }
  const std::string written = sluice::ifds::WriteText(*problem);
  if (sluice::ifds::WriteText(*reread) != written) std::abort();
  absl::StatusOr<sluice::ifds::Problem> again = sluice::ifds::ParseText(written, "again.ifds");
  if (!again.ok() || sluice::ifds::WriteText(*again) != written) std::abort();
  return 0;
}
