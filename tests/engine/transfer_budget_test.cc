#include "sluice/engine/transfer_budget.h"

#include <memory>
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

TEST(TransferBudgetTest, ChargesCountPastTheLimitAndLeaveNoRoomUntilGivenBack) {
  TransferBudget daemon(100);
  std::shared_ptr<TransferBudget> tenant =
      TransferBudget::Child(&daemon, 50, "this tenant's sessions", "its transfer_share");
  EXPECT_TRUE(tenant->has_room());
  TransferBudget::Hold message = tenant->Charge(40);
  EXPECT_TRUE(tenant->has_room());
  message.Grow(20);  // a reply made after the message: in memory already, so counted
  EXPECT_EQ(tenant->in_use(), 60u);
  EXPECT_EQ(daemon.in_use(), 60u) << "a child's charge counts in its parent";
  EXPECT_FALSE(tenant->has_room()) << "past its share, the tenant takes no more";
  EXPECT_TRUE(daemon.has_room());
  EXPECT_THAT(tenant->Reserve(1, "an upload"),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("transfer_share")));
  TransferBudget::Hold other = daemon.Charge(40);
  EXPECT_FALSE(daemon.has_room());
  message.Shrink(10);
  EXPECT_TRUE(tenant->has_room());
  EXPECT_TRUE(daemon.has_room()) << "50 of 100 after the shrink";
  other.Release();
  message.Release();
  EXPECT_EQ(tenant->in_use(), 0u);
  EXPECT_EQ(daemon.in_use(), 0u);
  // A parent that reservations fill still lets its children's small requests in, up to an
  // eighth past its limit; then its children have no room either.
  ASSERT_OK_AND_ASSIGN(TransferBudget::Hold reserved, daemon.Reserve(100, "an upload"));
  EXPECT_TRUE(tenant->has_room());
  EXPECT_THAT(tenant->Reserve(1, "a read"), StatusIs(absl::StatusCode::kResourceExhausted,
                                                     HasSubstr("none to spare")));
  TransferBudget::Hold charged = tenant->Charge(TransferBudget::ChargedBound(100) - 100 - 1);
  EXPECT_TRUE(tenant->has_room());
  charged.Grow(1);
  EXPECT_EQ(daemon.in_use(), TransferBudget::ChargedBound(100));
  EXPECT_FALSE(tenant->has_room());
}

}  // namespace
}  // namespace sluice
