// The record of a resumable session's replies on its own: what it keeps, what it charges, and
// that it stays bounded for a client that never says it has its replies.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/server/grpc/resumable_sessions.h"

namespace sluice {
namespace {

TEST(ReplyRecordTest, ARecordNeverSettledStaysBoundedAndCountedToTheBudget) {
  TransferBudget budget(uint64_t{1} << 30);
  ReplyRecord record;
  const std::vector<grpc::ByteBuffer> none;
  // Twice as many reads (pings) as the record keeps, never settled.
  const uint64_t sent = 2 * ReplyRecord::kMaxEntries;
  for (uint64_t id = 1; id <= sent; ++id) record.Add(id, none, /*read_only=*/true, budget);
  EXPECT_EQ(record.entries(), ReplyRecord::kMaxEntries);
  EXPECT_EQ(budget.in_use(), ReplyRecord::kMaxEntries * ReplyRecord::kEntryBytes);
  EXPECT_EQ(record.last_completed(), sent);
  // The newest are still known (a read runs again); the oldest are forgotten.
  EXPECT_EQ(record.Resend(sent).kind, ReplyRecord::Answer::kRun);
  EXPECT_EQ(record.Resend(sent - ReplyRecord::kMaxEntries + 1).kind,
            ReplyRecord::Answer::kRun);
  EXPECT_EQ(record.Resend(sent - ReplyRecord::kMaxEntries).kind, ReplyRecord::Answer::kLost);
  EXPECT_EQ(record.Resend(1).kind, ReplyRecord::Answer::kLost);
  // An id given twice takes one entry.
  record.Add(sent, none, /*read_only=*/true, budget);
  EXPECT_EQ(record.entries(), ReplyRecord::kMaxEntries);
  EXPECT_EQ(budget.in_use(), ReplyRecord::kMaxEntries * ReplyRecord::kEntryBytes);
  record.Settle(sent);
  EXPECT_EQ(record.entries(), 0u);
  EXPECT_EQ(budget.in_use(), 0u);
}

}  // namespace
}  // namespace sluice
