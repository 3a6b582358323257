// sluice token [hash]: bearer tokens for a daemon's tenants file. The daemon stores digests
// only; the token itself goes to the tenant's clients (SLUICE_TOKEN).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sluice/base/token.h"
#include "sluice/tools/cli.h"

namespace sluice {

int RunToken(const std::vector<std::string>& args) {
  if (args.size() == 2) {
    const std::string token = NewToken();
    std::printf("token:  %s\n", token.c_str());
    std::printf("digest: %s\n", FormatTokenDigest(DigestToken(token)).c_str());
    std::printf("Give the token to the tenant's clients (SLUICE_TOKEN); list the digest in the "
                "tenant's tokens = [...] of the daemon's tenants file.\n");
    return kExitOk;
  }
  if (args.size() == 3 && args[2] == "hash") {
    std::string line;
    int tokens = 0;
    for (uint64_t number = 1;; ++number) {
      // A line is read up to a byte past the longest token: a stream without line ends
      // (/dev/zero) is refused at its first, not read into memory whole.
      line.clear();
      int c;
      while ((c = std::getchar()) != EOF && c != '\n' && line.size() <= kMaxTokenBytes + 1) {
        line.push_back(static_cast<char>(c));
      }
      if (c == EOF && line.empty()) break;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      if (absl::Status valid = CheckToken(line); !valid.ok()) {
        std::fprintf(stderr, "sluice token hash: line %llu: %s\n",
                     static_cast<unsigned long long>(number),
                     std::string(valid.message()).c_str());
        return kExitUsage;
      }
      std::printf("%s\n", FormatTokenDigest(DigestToken(line)).c_str());
      ++tokens;
    }
    if (tokens == 0) {
      std::fprintf(stderr, "sluice token hash: no token on stdin (one per line)\n");
      return kExitUsage;
    }
    return kExitOk;
  }
  std::fprintf(stderr, "sluice token: takes nothing, or `hash` (tokens on stdin)\n");
  return kExitUsage;
}

}  // namespace sluice
