// The IFDS binary format, for problems too large to want as text: a versioned header with every
// count, then fixed-width little-endian arrays, then (optionally) names. Layout in
// docs/ifds-format.md.
#ifndef SLUICE_IFDS_BINARY_FORMAT_H_
#define SLUICE_IFDS_BINARY_FORMAT_H_

#include <functional>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "sluice/ifds/problem.h"

namespace sluice::ifds {

inline constexpr std::string_view kBinaryMagic = "SLUICEIF";

// Reads a binary problem. Every count is checked against the bytes present before anything is
// allocated; errors are InvalidArgument "FILE: what". The result passes Validate.
absl::StatusOr<Problem> ParseBinary(std::string_view bytes, std::string_view filename);

// Writes `problem` (which must pass Validate); with `names` false the names are left out and a
// reader makes up "n<id>", "f<id>" and "p<id>".
std::string WriteBinary(const Problem& problem, bool names = true);

// The largest problem file LoadProblem reads.
inline constexpr uint64_t kMaxProblemFileBytes = uint64_t{4} << 30;

struct LoadOptions {
  // A text file is read twice, each piece given back once read (TextPaging::reload): the parse
  // holds a few megabytes of the text at a time where it held all of it, for a second reading
  // from the system's cache (a mapped file's pages fault in again; a file read into memory is
  // read again). For callers whose peak is the parse (a client of a daemon, which holds no
  // device memory); the file must not change meanwhile (DataLoss if it does).
  bool reread = false;
  // Where set, told of the problem's flows once each, in order (see TextPaging::flows_read),
  // as a text file's parser is done with them, or at once once a binary file or a pipe is
  // read: a caller may take them elsewhere as the file is read (StagedFlowLists). An
  // error stops the reading, which returns it.
  std::function<absl::Status(FlowTable& flows, size_t first, size_t last)> flows_read;
};

// Reads a problem file in either format (the binary magic decides); a pipe works too. Errors
// carry the file name: NotFound if it cannot be opened, InvalidArgument for a directory, a file
// past kMaxProblemFileBytes or one that fits neither format, DataLoss if reading fails.
// A regular file is read in place (MappedFile) where the system maps it; such a file that
// changes while it is read (its size or time of change moves) is DataLoss too.
absl::StatusOr<Problem> LoadProblem(const std::string& path, const LoadOptions& options = {});

namespace internal {
// ParseBinary reads a file's flows this many at a time, the pieces on every core.
inline constexpr size_t kBinaryFlowsPerPiece = size_t{1} << 14;

// LoadProblem, calling `mapped` where a regular file is mapped, before it is read: a test's
// way to change the file under a reader.
absl::StatusOr<Problem> LoadProblem(const std::string& path, const LoadOptions& options,
                                    absl::FunctionRef<void()> mapped);
}  // namespace internal

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_BINARY_FORMAT_H_
