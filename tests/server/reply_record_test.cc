// The record of a resumable session's replies on its own: what it keeps, what it charges, and
// that it stays bounded for a client that never says it has its replies. And the registry of
// resumable sessions: one stream at a time waits to resume a session.
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/executor.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/server/grpc/resumable_sessions.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

TEST(ReplyRecordTest, ARecordNeverSettledStaysBoundedAndCountedToTheBudget) {
  TransferBudget budget(uint64_t{1} << 30);
  ReplyRecord record;
  const std::vector<grpc::ByteBuffer> none;
  // Twice as many reads (pings) as the record keeps, never settled.
  const uint64_t sent = 2 * ReplyRecord::kMaxEntries;
  uint64_t id = 1;
  // The first entries are part of what any session costs; the rest are charged.
  for (; id <= ReplyRecord::kFreeEntries; ++id) record.Add(id, none, true, budget);
  EXPECT_EQ(budget.in_use(), 0u);
  for (; id <= ReplyRecord::kFreeEntries + 10; ++id) record.Add(id, none, true, budget);
  EXPECT_EQ(budget.in_use(), 10 * ReplyRecord::kEntryBytes);
  for (; id <= sent; ++id) record.Add(id, none, /*read_only=*/true, budget);
  // The oldest (and free) ones forgotten, every entry kept is charged.
  const uint64_t charged = ReplyRecord::kMaxEntries * ReplyRecord::kEntryBytes;
  EXPECT_EQ(record.entries(), ReplyRecord::kMaxEntries);
  EXPECT_EQ(budget.in_use(), charged);
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
  EXPECT_EQ(budget.in_use(), charged);
  record.Settle(sent);
  EXPECT_EQ(record.entries(), 0u);
  EXPECT_EQ(budget.in_use(), 0u);
}

// A stream that never lets its session go (its request runs on), and says when it was asked.
class BusyStream : public ResumableSessions::Holder {
 public:
  void LetGo() override { asked.Notify(); }
  absl::Notification asked;
};

TEST(ResumableSessionsTest, OneStreamAtATimeWaitsToResumeASession) {
  Executor executor(2);
  ResumableSessions sessions(absl::Minutes(1), &executor);
  BusyStream old_stream, first, second;
  const std::string token = sessions.Register("", "", "client", &old_stream);
  absl::StatusOr<ResumableSessions::Parked> waited;
  std::thread waiting([&] { waited = sessions.Take(token, "", &first, absl::Minutes(1)); });
  old_stream.asked.WaitForNotification();  // the first resume waits for the old stream now
  // Another resume of the session is answered at once, taking no thread meanwhile.
  EXPECT_THAT(sessions.Take(token, "", &second, absl::Minutes(1)),
              testing::StatusIs(absl::StatusCode::kUnavailable,
                                ::testing::HasSubstr("another stream is resuming")));
  // Another tenant's resume learns nothing of it.
  EXPECT_THAT(sessions.Take(token, "other", &second, absl::Minutes(1)),
              testing::StatusIs(absl::StatusCode::kNotFound));
  sessions.Forget(token);  // the session closes: the first resume ends too
  waiting.join();
  EXPECT_THAT(waited, testing::StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace sluice
