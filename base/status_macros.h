// Tiny status-propagation macros, kept until the distribution's Abseil ships its own.
#ifndef SLUICE_BASE_STATUS_MACROS_H_
#define SLUICE_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SLUICE_CONCAT_INNER_(a, b) a##b
#define SLUICE_CONCAT_(a, b) SLUICE_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)                                  \
  do {                                                         \
    ::absl::Status sluice_status_ = (expr);                    \
    if (!sluice_status_.ok()) return sluice_status_;           \
  } while (0)

// ASSIGN_OR_RETURN(auto x, MakeX()); declares or assigns `lhs` from a StatusOr, or returns
// its status.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  SLUICE_ASSIGN_OR_RETURN_IMPL_(SLUICE_CONCAT_(sluice_statusor_, __LINE__), lhs, rexpr)

#define SLUICE_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                  \
  if (!statusor.ok()) return std::move(statusor).status();  \
  lhs = std::move(statusor).value()

#endif  // SLUICE_BASE_STATUS_MACROS_H_
