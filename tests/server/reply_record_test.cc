// The record of a resumable session's replies on its own: what it keeps, what it charges, that
// replies it keeps and a stream sends are counted once, and that it stays bounded for a client
// that never says it has its replies. And the registry of resumable sessions: one stream at a
// time waits to resume a session.
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/executor.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/server/grpc/reply_codec.h"
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
  for (; id <= ReplyRecord::kFreeEntries; ++id) record.Add(id, none, true, nullptr, budget);
  EXPECT_EQ(budget.in_use(), 0u);
  for (; id <= ReplyRecord::kFreeEntries + 10; ++id) record.Add(id, none, true, nullptr, budget);
  EXPECT_EQ(budget.in_use(), 10 * ReplyRecord::kEntryBytes);
  for (; id <= sent; ++id) record.Add(id, none, /*read_only=*/true, nullptr, budget);
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
  record.Add(sent, none, /*read_only=*/true, nullptr, budget);
  EXPECT_EQ(record.entries(), ReplyRecord::kMaxEntries);
  EXPECT_EQ(budget.in_use(), charged);
  record.Settle(sent);
  EXPECT_EQ(record.entries(), 0u);
  EXPECT_EQ(budget.in_use(), 0u);
}

// `bytes` of replies, as a request's made and serialized ones.
std::vector<grpc::ByteBuffer> Replies(size_t bytes) {
  grpc::Slice slice(bytes);
  return {grpc::ByteBuffer(&slice, 1)};
}

// What counts `replies` as the stream that sends them does: a charge to `budget`, shared.
ReplyRecord::SharedHold Counted(const std::vector<grpc::ByteBuffer>& replies,
                                TransferBudget& budget) {
  return std::make_shared<const TransferBudget::Hold>(budget.Charge(HeldBytes(replies)));
}

TEST(ReplyRecordTest, RepliesTheRecordKeepsAreCountedOnceUntilTheRecordAndTheStreamLetGo) {
  TransferBudget budget(uint64_t{1} << 30);
  ReplyRecord record;
  for (const size_t bytes : {size_t{100}, size_t{4} << 20}) {  // small, and an execute's reads
    SCOPED_TRACE(bytes);
    const std::vector<grpc::ByteBuffer> replies = Replies(bytes);
    const uint64_t held = HeldBytes(replies);
    // Sent, then settled: counted while either holds them, once.
    ReplyRecord::SharedHold sending = Counted(replies, budget);
    record.Add(1, replies, /*read_only=*/false, sending, budget);
    EXPECT_EQ(budget.in_use(), held);
    EXPECT_EQ(record.bytes(), held);
    sending.reset();  // sent
    EXPECT_EQ(budget.in_use(), held) << "the record keeps them";
    ReplyRecord::Answer replay = record.Resend(1);
    ASSERT_EQ(replay.kind, ReplyRecord::Answer::kReplay);
    EXPECT_EQ(replay.counted.get(), record.Resend(1).counted.get());
    EXPECT_EQ(budget.in_use(), held) << "a replay shares what counts them";
    replay = {};
    record.Settle(1);
    EXPECT_EQ(budget.in_use(), 0u);
    // Settled (or forgotten) while still being sent: counted until sent.
    sending = Counted(replies, budget);
    record.Add(2, replies, /*read_only=*/false, sending, budget);
    record.Settle(2);
    EXPECT_EQ(budget.in_use(), held) << "the stream still sends them";
    sending.reset();
    EXPECT_EQ(budget.in_use(), 0u);
  }
}

TEST(ReplyRecordTest, LargeRepliesAreKeptOnlyWhereTheBudgetCountingThemIsWithinItsLimit) {
  const std::vector<grpc::ByteBuffer> large = Replies(size_t{1} << 20);
  const std::vector<grpc::ByteBuffer> small = Replies(100);
  const uint64_t held = HeldBytes(large);
  // Room for the replies once (as the stream holds them), not twice: kept.
  {
    TransferBudget budget(held + held / 2);
    ReplyRecord record;
    record.Add(1, large, /*read_only=*/false, Counted(large, budget), budget);
    EXPECT_EQ(record.Resend(1).kind, ReplyRecord::Answer::kReplay);
  }
  // Counted past the limit (a charge): not kept, and no longer counted once sent. A small
  // reply is kept all the same.
  TransferBudget budget(held - 1);
  ReplyRecord record;
  record.Add(1, large, /*read_only=*/false, Counted(large, budget), budget);
  EXPECT_EQ(record.Resend(1).kind, ReplyRecord::Answer::kLost);
  EXPECT_EQ(budget.in_use(), 0u);
  ReplyRecord::SharedHold sending = Counted(large, budget);
  record.Add(2, small, /*read_only=*/false, Counted(small, budget), budget);
  EXPECT_EQ(record.Resend(2).kind, ReplyRecord::Answer::kReplay);
  sending.reset();
  EXPECT_EQ(budget.in_use(), HeldBytes(small));
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
