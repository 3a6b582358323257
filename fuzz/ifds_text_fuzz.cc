// The IFDS text format's parser on arbitrary bytes: it returns a problem or an error, never
// crashes, and what it accepts writes back to text that parses to the same problem. Read in
// small stretches on two threads with the text given back and reloaded as it goes (a client's
// reading, LoadOptions::reread), in small stretches with a first pass that stops at the first
// connection or reads every line, and read statement by statement without the fast way, it
// gives the same answer. Told of its flows as it reads them (TextPaging::flows_read, as a
// client that sends them to a daemon is), it tells of each once, in order, and fails where it
// fails without that.
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
  // In stretches of a few lines, the first pass reading every line rather than stopping at
  // the first connection: the same answer.
  const absl::StatusOr<sluice::ifds::Problem> whole =
      sluice::ifds::internal::ParseTextInStretches(text, "fuzz.ifds", 64, 2, false);
  const absl::StatusOr<sluice::ifds::Problem> declarations_first =
      sluice::ifds::internal::ParseTextInStretches(text, "fuzz.ifds", 64, 2, true);
  if (whole.status() != problem.status() || declarations_first.status() != problem.status()) {
    std::abort();
  }
  sluice::ifds::FlowTable told;
  const auto tell = [&](sluice::ifds::FlowTable& flows, size_t first, size_t last) {
    if (first != told.size() || last <= first || last > flows.size()) std::abort();
    for (size_t f = first; f < last; ++f) told.push_back(flows[f]);
    flows.Release(first, last);
    return absl::OkStatus();
  };
  const absl::StatusOr<sluice::ifds::Problem> telling =
      sluice::ifds::internal::ParseTextOverwritingConsumed(text, "fuzz.ifds", 64, 2, false, tell);
  if (telling.status() != problem.status()) std::abort();
  // Read in the same stretches, it made the same flows (a flow written again in a stretch is
  // shared there).
  if (problem.ok() && (told != reread->flows || telling->flows.size() != told.size())) {
    std::abort();
  }
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
  if (sluice::ifds::WriteText(*reread) != written ||
      sluice::ifds::WriteText(*whole) != written ||
      sluice::ifds::WriteText(*declarations_first) != written) {
    std::abort();
  }
  absl::StatusOr<sluice::ifds::Problem> again = sluice::ifds::ParseText(written, "again.ifds");
  if (!again.ok() || sluice::ifds::WriteText(*again) != written) std::abort();
  return 0;
}
