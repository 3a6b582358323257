// The fixture the typed suites share: a harness of type Harness and one dispatcher from it;
// skips when the harness's backend does not exist on this machine (fails where it is required).
#ifndef SLUICE_TESTS_TESTING_HARNESS_TEST_H_
#define SLUICE_TESTS_TESTING_HARNESS_TEST_H_

#include <memory>

#include "gtest/gtest.h"
#include "sluice/client/resident_dispatch.h"
#include "tests/testing/dispatch_harness.h"

namespace sluice::testing {

template <class Harness>
class HarnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    harness_ = std::make_unique<Harness>();
    SLUICE_SKIP_OR_FAIL_WITHOUT_BACKEND(*harness_);
    absl::StatusOr<std::unique_ptr<ResidentDispatch>> dispatch = harness_->NewDispatch();
    ASSERT_TRUE(dispatch.ok()) << dispatch.status();
    dispatch_ = std::move(*dispatch);
  }

  std::unique_ptr<Harness> harness_;
  std::unique_ptr<ResidentDispatch> dispatch_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_HARNESS_TEST_H_
