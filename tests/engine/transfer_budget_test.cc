#include "sluice/engine/transfer_budget.h"

#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;
using ::testing::HasSubstr;

TEST(TransferBudgetTest, HoldsGiveTheirBytesBackWhenTheyGoOrShrink) {
  TransferBudget budget(100);
  {
    ASSERT_OK_AND_ASSIGN(TransferBudget::Hold a, budget.Reserve(60, "an upload"));
    EXPECT_EQ(budget.in_use(), 60u);
    EXPECT_THAT(budget.Reserve(41, "a read"),
                StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("a read needs 41")));
    ASSERT_OK_AND_ASSIGN(TransferBudget::Hold b, budget.Reserve(40, "a read"));
    EXPECT_EQ(budget.in_use(), 100u);
    b.Shrink(10);
    EXPECT_EQ(budget.in_use(), 70u);
    b.Shrink(20);  // never grows
    EXPECT_EQ(b.bytes(), 10u);
    TransferBudget::Hold moved = std::move(a);
    EXPECT_EQ(budget.in_use(), 70u) << "a move keeps the bytes held once";
    moved = std::move(b);  // the assigned-to hold gives its own bytes back
    EXPECT_EQ(budget.in_use(), 10u);
  }
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_THAT(budget.Reserve(~uint64_t{0}, "x"), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(budget.in_use(), 0u);
}

}  // namespace
}  // namespace sluice
