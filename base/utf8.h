// UTF-8 as RFC 3629 has it: no overlong forms, no surrogates (U+D800..DFFF), nothing past
// U+10FFFF. Inline: the text format's reader checks every name past ASCII with it.
#ifndef SLUICE_BASE_UTF8_H_
#define SLUICE_BASE_UTF8_H_

#include <cstddef>
#include <string_view>

namespace sluice {

// Length of the valid UTF-8 sequence at the start of `s`, or 0 (and 0 for an empty `s`).
inline size_t Utf8Length(std::string_view s) {
  if (s.empty()) return 0;
  const unsigned char c = static_cast<unsigned char>(s[0]);
  if (c < 0x80) return 1;
  size_t n = 0;
  // The range the second byte must lie in; the later ones are always 0x80..0xbf.
  unsigned char low = 0x80, high = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) low = 0xa0;   // overlong below U+0800
    if (c == 0xed) high = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) low = 0x90;   // overlong below U+10000
    if (c == 0xf4) high = 0x8f;  // past U+10FFFF
  } else {
    return 0;  // a continuation byte, an overlong lead (c0, c1) or past f4
  }
  if (n > s.size()) return 0;
  const unsigned char second = static_cast<unsigned char>(s[1]);
  if (second < low || second > high) return 0;
  for (size_t i = 2; i < n; ++i) {
    if ((static_cast<unsigned char>(s[i]) >> 6) != 0x2) return 0;
  }
  return n;
}

inline bool IsValidUtf8(std::string_view s) {
  while (!s.empty()) {
    const size_t n = Utf8Length(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

// The characters (code points) of valid UTF-8 `s` that begin before byte `bytes`, which may lie
// past its end (each byte there a character): a byte offset into a line as a character offset.
inline size_t Utf8CharactersBefore(std::string_view s, size_t bytes) {
  size_t characters = bytes > s.size() ? bytes - s.size() : 0;
  for (size_t i = 0; i < bytes && i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) >> 6) != 0x2) ++characters;  // not a continuation
  }
  return characters;
}

}  // namespace sluice

#endif  // SLUICE_BASE_UTF8_H_
