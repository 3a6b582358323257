#include "sluice/base/token.h"

#include <cstdio>
#include <cstdlib>

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice {
namespace {

constexpr std::string_view kPrefix = "sha256:";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

TokenDigest DigestToken(std::string_view token) {
  TokenDigest digest;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
  return digest;
}

std::string FormatTokenDigest(const TokenDigest& digest) {
  std::string out(kPrefix);
  for (const uint8_t byte : digest) absl::StrAppendFormat(&out, "%02x", byte);
  return out;
}

absl::StatusOr<TokenDigest> ParseTokenDigest(std::string_view text) {
  const auto malformed = [] {
    return absl::InvalidArgumentError(
        "a token digest is \"sha256:\" and 64 hex digits (`sluice token hash` prints one)");
  };
  if (text.substr(0, kPrefix.size()) != kPrefix) return malformed();
  text.remove_prefix(kPrefix.size());
  TokenDigest digest;
  if (text.size() != 2 * digest.size()) return malformed();
  for (size_t i = 0; i < digest.size(); ++i) {
    const int high = HexValue(text[2 * i]);
    const int low = HexValue(text[2 * i + 1]);
    if (high < 0 || low < 0) return malformed();
    digest[i] = static_cast<uint8_t>(high << 4 | low);
  }
  return digest;
}

bool DigestsEqual(const TokenDigest& a, const TokenDigest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string NewToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    // OpenSSL's generator reads the kernel's; it fails only without one. No weak fallback.
    std::fprintf(stderr, "sluice: the system's random generator failed\n");
    std::abort();
  }
  return absl::WebSafeBase64Escape(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

absl::Status CheckToken(std::string_view token) {
  if (token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the token is %d bytes; a token is at most %d", token.size(), kMaxTokenBytes));
  }
  for (size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the token holds byte 0x%02x at %d: a token is printable ASCII, with no blank, no "
          "line end (a token file read with its newline?) and nothing past ASCII",
          c, i));
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice
