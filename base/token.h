// Bearer tokens: a tenant's secret that a client sends with every call. The daemon never
// stores a token, only its SHA-256 ("sha256:" and 64 hex digits), and compares digests in
// constant time, so neither its files nor its timing reveal a valid token.
#ifndef SLUICE_BASE_TOKEN_H_
#define SLUICE_BASE_TOKEN_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice {

using TokenDigest = std::array<uint8_t, 32>;

// The SHA-256 of `token`. Its time depends only on the token's length.
TokenDigest DigestToken(std::string_view token);
// "sha256:<64 lowercase hex digits>", as tenants files store it.
std::string FormatTokenDigest(const TokenDigest& digest);
// Parses FormatTokenDigest's form (hex digits of either case); InvalidArgument otherwise.
absl::StatusOr<TokenDigest> ParseTokenDigest(std::string_view text);
// Whether the two are equal, in time that does not depend on where they differ.
bool DigestsEqual(const TokenDigest& a, const TokenDigest& b);
// A new token: 32 bytes from the operating system's entropy source, as 43 characters of
// unpadded base64url.
std::string NewToken();

// The longest token (a gRPC header holds 8 KiB at most by default).
inline constexpr size_t kMaxTokenBytes = 4096;
// OK for a token a client may send: printable ASCII with no blank (0x21 to 0x7e), at most
// kMaxTokenBytes (a token travels as an HTTP/2 header's value, which gRPC takes as printable
// ASCII only). InvalidArgument saying what is wrong otherwise.
absl::Status CheckToken(std::string_view token);

}  // namespace sluice

#endif  // SLUICE_BASE_TOKEN_H_
