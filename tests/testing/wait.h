// A bounded wait for a condition in tests: polls `done` every few milliseconds for at most
// `timeout` (never a bare sleep that hopes something happened).
#ifndef SLUICE_TESTS_TESTING_WAIT_H_
#define SLUICE_TESTS_TESTING_WAIT_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace sluice::testing {

// True once `done` returns true, false when `timeout` passes first.
template <class Done>
bool WaitUntil(absl::Duration timeout, Done done) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return done();
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_WAIT_H_
