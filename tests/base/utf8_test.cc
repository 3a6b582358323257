#include "sluice/base/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(Utf8Test, SequencesAreValidAsRfc3629HasThem) {
  EXPECT_EQ(Utf8Length("a"), 1u);
  EXPECT_EQ(Utf8Length("\xc3\xa9"), 2u);          // U+00E9
  EXPECT_EQ(Utf8Length("\xe2\x82\xac"), 3u);      // U+20AC
  EXPECT_EQ(Utf8Length("\xf0\x9f\x98\x80"), 4u);  // U+1F600
  EXPECT_EQ(Utf8Length("\xf4\x8f\xbf\xbf"), 4u);  // U+10FFFF, the last
  EXPECT_EQ(Utf8Length(""), 0u);
  EXPECT_EQ(Utf8Length("\xe9"), 0u);                  // Latin-1's e-acute
  EXPECT_EQ(Utf8Length("\xa9"), 0u);                  // a continuation byte first
  EXPECT_EQ(Utf8Length("\xc0\x80"), 0u);              // overlong NUL
  EXPECT_EQ(Utf8Length("\xe0\x80\x80"), 0u);          // overlong, three bytes
  EXPECT_EQ(Utf8Length("\xf0\x80\x80\x80"), 0u);      // overlong, four bytes
  EXPECT_EQ(Utf8Length("\xed\xa0\x80"), 0u);          // a surrogate, U+D800
  EXPECT_EQ(Utf8Length("\xf4\x90\x80\x80"), 0u);      // past U+10FFFF
  EXPECT_EQ(Utf8Length("\xe2\x82"), 0u);              // cut short
  EXPECT_EQ(Utf8Length("\xe2\x28\xac"), 0u);          // not a continuation
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac"));
  EXPECT_FALSE(IsValidUtf8("caf\xe9"));
  EXPECT_FALSE(IsValidUtf8(std::string("ok\xc3", 3)));
}

TEST(Utf8Test, AByteOffsetIsCountedInCharacters) {
  const std::string line = "/* caf\xc3\xa9 \xe2\x82\xac */ x";
  EXPECT_EQ(Utf8CharactersBefore(line, 0), 0u);
  EXPECT_EQ(Utf8CharactersBefore(line, 6), 6u);   // "/* caf"
  EXPECT_EQ(Utf8CharactersBefore(line, 8), 7u);   // and the 2-byte e-acute
  EXPECT_EQ(Utf8CharactersBefore(line, 12), 9u);  // " " and the 3-byte euro sign
  EXPECT_EQ(Utf8CharactersBefore(line, line.size()), 14u);
  EXPECT_EQ(Utf8CharactersBefore(line, line.size() + 2), 16u);  // past the end: a byte each
}

}  // namespace
}  // namespace sluice
