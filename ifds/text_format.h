// The IFDS text format (docs/ifds-format.md): line-oriented statements that declare facts,
// procedures and nodes, and give edges, call sites and seeds with their flow functions.
#ifndef SLUICE_IFDS_TEXT_FORMAT_H_
#define SLUICE_IFDS_TEXT_FORMAT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "sluice/ifds/problem.h"

namespace sluice::ifds {

// Parses `text`. Errors are InvalidArgument with the message "FILE:LINE:COLUMN: what", FILE
// being `filename`. Never crashes on any input; the result passes Validate.
// A front end lists its declarations (facts, procedures, nodes) before its connections (edges,
// call sites, callees, seeds), and the parser reads the text that way first: its first pass
// stops at the first connection, and the second reads the rest. Where that reading meets a
// declaration or anything else it cannot take (an error), the text is read again with a first
// pass over all of it, so that the problem and the error are the ones a statement-by-statement
// reading gives.
absl::StatusOr<Problem> ParseText(std::string_view text, std::string_view filename);

// How a caller holds the text, and the problem's flows, as the parser goes.
struct TextPaging {
  // Told of bytes [begin, end) the parser reads no more unless it reloads them first: their
  // memory may go back. Each pass tells of its ranges in order, each beginning where the last
  // ended (the first at 0), so that the caller may give back whole pages up to `end`. The
  // second pass tells of everything before where it is, now and then (every kReleaseStepBytes
  // or so; every MiB where it reloads).
  absl::FunctionRef<void(size_t begin, size_t end)> release;
  // Where set, the text need not be there at first: the parser has each range reloaded before
  // it reads it (reload(begin, end) puts the text's bytes [begin, end) in place). The first
  // pass reads the text in order and releases each piece once it has read it; the second
  // reloads each stretch it reads. The text is read twice, and little of it held at once.
  std::optional<absl::FunctionRef<void(size_t begin, size_t end)>> reload;
  // Where set, told of flows [first, last) of `flows` (the problem's) as the parser is done with
  // them, on the thread that called it: each flow once, in order, the first range from 0, the
  // last ending at the problem's last flow, each range checked as Validate checks flows. The
  // caller may take them elsewhere and give them back (FlowTable::Release): the parser reads
  // them no more, and the problem it returns then holds the flows' count alone. An error
  // stops the parse, which returns it.
  std::optional<absl::FunctionRef<absl::Status(FlowTable& flows, size_t first, size_t last)>>
      flows_read;
  // Whether the text released is there again when it is read again (a mapped file's pages come
  // back from the system's cache). Where it is, and neither `reload` nor `flows_read` is set,
  // the parser may read the text again from its start, telling of its ranges again from 0: its
  // first pass stops where the declarations end, and the second reads the text again whole if
  // it meets a statement that pass did not read (ParseText, below).
  bool released_text_returns = false;
};
inline constexpr size_t kReleaseStepBytes = size_t{4} << 20;
// As ParseText, for text the caller gives back as the parser goes: the same errors, and the
// same problem but for how its flows are shared. A flow written again is read once a stretch
// of the text and shared there; where the text is read twice (`reload`) the stretches are a
// quarter as long, so the problem may hold a few more flows (36.5 MiB of them at 5M path
// edges, 36.4 with whole stretches), and its compiled form a few more words, for the same
// answer.
absl::StatusOr<Problem> ParseText(std::string_view text, std::string_view filename,
                                  const TextPaging& paging);

namespace internal {
// ParseText without its fast way (every statement tokenized in both passes): the same result
// and the same errors, slower. Tests compare the two.
absl::StatusOr<Problem> ParseTextStatementByStatement(std::string_view text,
                                                      std::string_view filename);
// ParseText in stretches of `stretch_bytes` (0: as ParseText does) on `threads` threads (0: one
// per core), with or without its first pass stopping at the first connection
// (`declarations_first`): tests compare it with the others. `first_pass_end`, if given, is
// set to where the first reading's first pass stopped (the text's size where it read it all).
absl::StatusOr<Problem> ParseTextInStretches(std::string_view text, std::string_view filename,
                                             size_t stretch_bytes, unsigned threads,
                                             bool declarations_first = true,
                                             size_t* first_pass_end = nullptr);
// ParseText of a copy of `text` whose bytes are overwritten with NUL as soon as the parser
// releases them (TextPaging), and copied back when it reloads them (`reread`: the first pass
// releases too): a parser that read them in between would see bytes that are no text. The
// passes read stretches of `stretch_bytes` (0: as ParseText with that paging does) on
// `threads` threads (0: one per core). Tests compare it with the others.
// With `flows_read`, the parser tells it of the flows as TextPaging::flows_read says.
absl::StatusOr<Problem> ParseTextOverwritingConsumed(
    std::string_view text, std::string_view filename, size_t stretch_bytes = 0,
    unsigned threads = 0, bool reread = false,
    std::optional<absl::FunctionRef<absl::Status(FlowTable&, size_t, size_t)>> flows_read =
        std::nullopt);
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
