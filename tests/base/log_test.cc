#include "base/log.h"

#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(LogRateLimiterTest, EachKeyGetsABurstThenAFewLinesASecondAndHearsWhatWasDropped) {
  LogRateLimiter limiter;
  const absl::Time start = absl::FromUnixSeconds(1000000);
  uint64_t dropped = 99;
  for (int i = 0; i < kLogBurst; ++i) {
    ASSERT_TRUE(limiter.Admit("flood", start, &dropped)) << i;
    EXPECT_EQ(dropped, 0u);
  }
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(limiter.Admit("flood", start, &dropped));
  // Another key is not held back by the flood.
  EXPECT_TRUE(limiter.Admit("calm", start, &dropped));
  // Half a second later one more line of the flood gets through, saying what was dropped.
  const absl::Time later = start + absl::Seconds(1.0 / kLogPerSecond);
  ASSERT_TRUE(limiter.Admit("flood", later, &dropped));
  EXPECT_EQ(dropped, 100u);
  EXPECT_FALSE(limiter.Admit("flood", later, &dropped));
}

TEST(LogContextTest, NamesWhatTheThreadWorksForWhileItLives) {
  EXPECT_EQ(LogContext::Current(), "");
  {
    const LogContext outer("ipv4:10.0.0.7:5000");
    EXPECT_EQ(LogContext::Current(), "ipv4:10.0.0.7:5000");
    {
      const LogContext inner("session 1");
      EXPECT_EQ(LogContext::Current(), "session 1");
    }
    EXPECT_EQ(LogContext::Current(), "ipv4:10.0.0.7:5000");
  }
  EXPECT_EQ(LogContext::Current(), "");
}

}  // namespace
}  // namespace sluice
