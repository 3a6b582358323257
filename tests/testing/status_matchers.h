// Status matchers for tests: EXPECT_THAT(f(), StatusIs(absl::StatusCode::kNotFound)), also with
// a message matcher: StatusIs(code, HasSubstr("...")).
#ifndef SLUICE_TESTS_TESTING_STATUS_MATCHERS_H_
#define SLUICE_TESTS_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace sluice::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <class T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER_P(StatusIs, code,
          std::string(negation ? "isn't" : "is") + " a status with code " +
              absl::StatusCodeToString(code)) {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "whose status is " << status;
  return status.code() == code;
}

// StatusIs(code, HasSubstr("why")): the code and a matcher for the message.
MATCHER_P2(StatusIs, code, message_matcher,
           std::string(negation ? "isn't" : "is") + " a status with code " +
               absl::StatusCodeToString(code) + " and a matching message") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "whose status is " << status;
  return status.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

MATCHER(IsOk, std::string(negation ? "isn't" : "is") + " OK") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "whose status is " << status;
  return status.ok();
}

}  // namespace sluice::testing

#define SLUICE_ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                      \
  ASSERT_TRUE(statusor.ok()) << statusor.status();              \
  lhs = std::move(statusor).value()

// ASSERT_OK_AND_ASSIGN(auto x, MakeX());
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  SLUICE_ASSERT_OK_AND_ASSIGN_IMPL_(SLUICE_TEST_CONCAT_(statusor_, __LINE__), lhs, rexpr)
#define SLUICE_TEST_CONCAT_INNER_(a, b) a##b
#define SLUICE_TEST_CONCAT_(a, b) SLUICE_TEST_CONCAT_INNER_(a, b)

#define ASSERT_OK(expr) ASSERT_THAT((expr), ::sluice::testing::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT((expr), ::sluice::testing::IsOk())

#endif  // SLUICE_TESTS_TESTING_STATUS_MATCHERS_H_
