// sluice token [hash]: bearer tokens for a daemon's tenants file. The daemon stores digests
// only; the token itself goes to the tenant's clients (SLUICE_TOKEN).
#include <cstdio>
#include <iostream>
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
    while (std::getline(std::cin, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
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
