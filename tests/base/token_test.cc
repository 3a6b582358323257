#include "sluice/base/token.h"

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(TokenTest, TheDigestIsSha256) {
  // FIPS 180-2's example.
  EXPECT_EQ(FormatTokenDigest(DigestToken("abc")),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(TokenTest, ADigestParsesBackInEitherCase) {
  const TokenDigest digest = DigestToken("a token");
  absl::StatusOr<TokenDigest> parsed = ParseTokenDigest(FormatTokenDigest(digest));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(DigestsEqual(*parsed, digest));
  std::string upper = FormatTokenDigest(digest);
  for (size_t i = 7; i < upper.size(); ++i) upper[i] = static_cast<char>(std::toupper(upper[i]));
  parsed = ParseTokenDigest(upper);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(DigestsEqual(*parsed, digest));
}

TEST(TokenTest, MalformedDigestsAreRefused) {
  const std::string good = FormatTokenDigest(DigestToken("x"));
  for (const std::string& bad :
       {std::string(""), std::string("sha256:"), good.substr(7), "md5:" + good.substr(7),
        good + "0", good.substr(0, good.size() - 1), good.substr(0, good.size() - 1) + "g"}) {
    EXPECT_FALSE(ParseTokenDigest(bad).ok()) << bad;
  }
}

TEST(TokenTest, DigestsEqualTellsEveryByte) {
  const TokenDigest a = DigestToken("a");
  for (size_t i = 0; i < a.size(); ++i) {
    TokenDigest b = a;
    b[i] ^= 1;
    EXPECT_FALSE(DigestsEqual(a, b)) << "byte " << i;
  }
  EXPECT_TRUE(DigestsEqual(a, DigestToken("a")));
}

TEST(TokenTest, NewTokensAreLongUrlSafeAndDistinct) {
  absl::flat_hash_set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string token = NewToken();
    EXPECT_EQ(token.size(), 43u);
    EXPECT_EQ(token.find_first_not_of(
                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos)
        << token;
    EXPECT_TRUE(seen.insert(token).second);
  }
}

// What a client may send as a token: printable ASCII with no blank, at most kMaxTokenBytes;
// every token NewToken makes is one.
TEST(TokenTest, ATokenIsPrintableAsciiWithNoBlankOfBoundedLength) {
  EXPECT_TRUE(CheckToken(NewToken()).ok());
  EXPECT_TRUE(CheckToken(std::string(kMaxTokenBytes, '~')).ok());
  EXPECT_TRUE(CheckToken("!").ok());
  for (const std::string& bad :
       {std::string("abc\n"), std::string("abc\r"), std::string("a b"), std::string("\t"),
        std::string("s3cr\xc3\xa9t"), std::string(1, '\0'), std::string(1, '\x7f'),
        std::string(kMaxTokenBytes + 1, 'x')}) {
    EXPECT_EQ(CheckToken(bad).code(), absl::StatusCode::kInvalidArgument) << bad.size();
  }
}

}  // namespace
}  // namespace sluice
