// Checks every dispatcher makes of a call's shape before anything else: private to the client
// library (not installed).
#ifndef SLUICE_CLIENT_INTERNAL_CALL_CHECKS_H_
#define SLUICE_CLIENT_INTERNAL_CALL_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "sluice/client/resident_dispatch.h"

namespace sluice {

// As many outputs as ranges, none null, no vector given twice. InvalidArgument otherwise.
absl::Status CheckOutputs(size_t ranges, absl::Span<std::vector<uint8_t>* const> outputs);

// As many outputs as ranges, each exactly its range's length, none overlapping another, none
// null unless empty. InvalidArgument otherwise.
absl::Status CheckSpanOutputs(absl::Span<const ReadRange> ranges,
                              absl::Span<const absl::Span<uint8_t>> outputs);

// What a call returns when read `index`'s target gives no room for its bytes (Internal).
absl::Status OutputRefused(size_t index);

// Every step names a program. InvalidArgument otherwise.
absl::Status CheckSteps(absl::Span<const Step> steps);

}  // namespace sluice

#endif  // SLUICE_CLIENT_INTERNAL_CALL_CHECKS_H_
