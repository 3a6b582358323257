// The IFDS text format (docs/ifds-format.md): line-oriented statements that declare facts,
// procedures and nodes, and give edges, call sites and seeds with their flow functions.
#ifndef SLUICE_IFDS_TEXT_FORMAT_H_
#define SLUICE_IFDS_TEXT_FORMAT_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "sluice/ifds/problem.h"

namespace sluice::ifds {

// Parses `text`. Errors are InvalidArgument with the message "FILE:LINE:COLUMN: what", FILE
// being `filename`. Never crashes on any input; the result passes Validate.
absl::StatusOr<Problem> ParseText(std::string_view text, std::string_view filename);

// As ParseText, for text the caller gives back as the parser goes: `consumed` is called now and
// then (every kConsumedStepBytes or so) with an offset, never smaller than the last one, below
// which the parser reads the text no more. The same result and errors.
inline constexpr size_t kConsumedStepBytes = size_t{4} << 20;
absl::StatusOr<Problem> ParseText(std::string_view text, std::string_view filename,
                                  absl::FunctionRef<void(size_t offset)> consumed);

namespace internal {
// ParseText without its fast way (every statement tokenized in both passes): the same result
// and the same errors, slower. Tests compare the two.
absl::StatusOr<Problem> ParseTextStatementByStatement(std::string_view text,
                                                      std::string_view filename);
// ParseText of a copy of `text` whose bytes are overwritten with NUL as soon as the parser says
// it is done with them (after every stretch of its second pass): a parser that read them again
// would see bytes that are no text. The second pass reads stretches of `stretch_bytes` (0: as
// ParseText does) on `threads` threads (0: one per core). Tests compare it with the others.
absl::StatusOr<Problem> ParseTextOverwritingConsumed(std::string_view text,
                                                     std::string_view filename,
                                                     size_t stretch_bytes = 0,
                                                     unsigned threads = 0);
}  // namespace internal

// Writes `problem` (which must pass Validate) in the text format. ParseText reads it back to an
// equivalent problem: the same names, edges and solution (ids may be renumbered, and a flow
// shared by several edges is written out at each).
std::string WriteText(const Problem& problem);

// True if `name` may be a fact, node or procedure name: one or more of A-Z a-z 0-9,
// _ . $ : @ ' < > [ ] / + * ! ? ~ ^ & | % = - and UTF-8 characters beyond ASCII (valid
// sequences only), never containing "->".
bool IsValidName(std::string_view name);

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_TEXT_FORMAT_H_
