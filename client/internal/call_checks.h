// Checks every dispatcher makes of a call's shape before anything else: private to the client
// library (not installed).
#ifndef SLUICE_CLIENT_INTERNAL_CALL_CHECKS_H_
#define SLUICE_CLIENT_INTERNAL_CALL_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "client/resident_dispatch.h"

namespace sluice {

// As many outputs as ranges, none null, no vector given twice. InvalidArgument otherwise.
absl::Status CheckOutputs(size_t ranges, absl::Span<std::vector<uint8_t>* const> outputs);

// Every step names a program. InvalidArgument otherwise.
absl::Status CheckSteps(absl::Span<const Step> steps);

}  // namespace sluice

#endif  // SLUICE_CLIENT_INTERNAL_CALL_CHECKS_H_
