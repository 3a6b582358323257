// Output files: what `sluice` writes to --out (and --emit-problem), a block at a time.
#ifndef SLUICE_TOOLS_OUTPUT_FILE_H_
#define SLUICE_TOOLS_OUTPUT_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace sluice {

// Hands `write` a sink that writes each block it is given to `path`, or to stdout where `path`
// is empty; `*bytes` counts what was written. An existing regular file is written over from its
// start and then cut to what was written, not truncated when it is opened: truncating drops its
// pages, waiting for any still being written back, and the writes then take new ones (a 63 MB
// answer over the one written the run before: 8 ms in place against 18-70 ms truncated first,
// docs/benchmarks.md). The file ends the same either way where writing stops early: an error
// (Unavailable, with the system's reason), an exception `write` throws (out of memory, thrown
// on once the file is cut), or SIGINT or SIGTERM, which stop the writing at its next block
// (Cancelled) while a regular file is written: each leaves what was written and nothing after
// it. Only a process killed outright in the middle of the writing (SIGKILL, or a second signal,
// which ends it at once) leaves the old file's tail after what it wrote, where truncating first
// left a short file.
absl::Status WriteToFile(
    const std::string& path,
    absl::FunctionRef<absl::Status(absl::FunctionRef<absl::Status(std::string_view)>)> write,
    uint64_t* bytes);

}  // namespace sluice

#endif  // SLUICE_TOOLS_OUTPUT_FILE_H_
