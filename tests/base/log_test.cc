#include "sluice/base/log.h"

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
  EXPECT_EQ(LogContext::Current().peer, "");
  {
    const LogContext outer(LogFields{.peer = "ipv4:10.0.0.7:5000"});
    EXPECT_EQ(LogContext::Current().peer, "ipv4:10.0.0.7:5000");
    {
      const LogContext inner(LogFields{.session = "s1"});
      EXPECT_EQ(LogContext::Current().session, "s1");
      EXPECT_EQ(LogContext::Current().peer, "");
    }
    EXPECT_EQ(LogContext::Current().peer, "ipv4:10.0.0.7:5000");
  }
  EXPECT_EQ(LogContext::Current().peer, "");
}

const absl::Time kWhen = absl::FromUnixMillis(1795000000123);

TEST(LogFormatTest, TextSaysThePeerAndALevelOtherThanInfo) {
  EXPECT_EQ(FormatLogLine(LogFormat::kText, kWhen, LogLevel::kInfo, "sluiced",
                          {.session = "s7", .peer = "ipv4:10.0.0.7:5000", .client = "job"},
                          "session s7 opened"),
            "2026-11-18T11:06:40.123Z sluiced: [ipv4:10.0.0.7:5000] session s7 opened");
  EXPECT_EQ(FormatLogLine(LogFormat::kText, kWhen, LogLevel::kError, "sluiced", {}, "GPU 0 lost"),
            "2026-11-18T11:06:40.123Z sluiced: error: GPU 0 lost");
}

TEST(LogFormatTest, JsonIsOneObjectALineWithTheKnownFieldsOnly) {
  const std::string line = FormatLogLine(
      LogFormat::kJson, kWhen, LogLevel::kWarning, "sluiced",
      {.session = "s7", .peer = "ipv4:10.0.0.7:5000", .client = "a \"quoted\"\nname"},
      "refused: \x01 \xff");
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line,
            "{\"time\":\"2026-11-18T11:06:40.123Z\",\"level\":\"warning\",\"program\":\"sluiced\","
            "\"session\":\"s7\",\"peer\":\"ipv4:10.0.0.7:5000\",\"client\":\"a \\\"quoted\\\"\\nname\","
            "\"message\":\"refused: \\u0001 \xef\xbf\xbd\"}");
}

TEST(LogFormatTest, FlagsNameTheTwoFormats) {
  LogFormat format = LogFormat::kText;
  std::string error;
  EXPECT_TRUE(AbslParseFlag("json", &format, &error));
  EXPECT_EQ(format, LogFormat::kJson);
  EXPECT_EQ(AbslUnparseFlag(format), "json");
  EXPECT_FALSE(AbslParseFlag("xml", &format, &error));
  EXPECT_EQ(error, "the log format is text or json");
}

}  // namespace
}  // namespace sluice
