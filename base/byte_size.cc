#include "sluice/base/byte_size.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace sluice {

bool AbslParseFlag(absl::string_view text, ByteSize* size, std::string* error) {
  text = absl::StripAsciiWhitespace(text);
  int shift = 0;
  if (!text.empty()) {
    switch (absl::ascii_toupper(text.back())) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: break;
    }
    if (shift != 0) text.remove_suffix(1);
  }
  uint64_t value = 0;
  if (text.empty() || !absl::SimpleAtoi(text, &value)) {
    *error = "expected a byte count such as 1048576, 512M or 64G";
    return false;
  }
  if (shift != 0 && value > (~uint64_t{0} >> shift)) {
    *error = "byte count overflows 64 bits";
    return false;
  }
  size->bytes = value << shift;
  return true;
}

std::string AbslUnparseFlag(ByteSize size) {
  // The largest unit that divides the count exactly, so that defaults read as written (64G).
  static constexpr char kUnits[] = "TGMK";
  for (int i = 0; i < 4; ++i) {
    const int shift = 40 - 10 * i;
    const uint64_t unit = uint64_t{1} << shift;
    if (size.bytes != 0 && size.bytes % unit == 0) {
      return absl::StrCat(size.bytes >> shift, std::string(1, kUnits[i]));
    }
  }
  return absl::StrCat(size.bytes);
}

}  // namespace sluice
