// Tenants: the teams that share a daemon, read from its tenants file (TOML, see
// docs/tenants.md). Each tenant has bearer tokens (stored as SHA-256 digests), limits on what
// all its sessions together may hold (device memory, sessions, a share of the transfer
// budget) and a weight in the device's time. A client proves who it is with a token; the
// daemon finds its tenant in time that does not depend on which token, if any, matched.
#ifndef SLUICE_SERVER_TENANTS_H_
#define SLUICE_SERVER_TENANTS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/base/token.h"
#include "sluice/engine/session_manager.h"

namespace sluice {

struct Tenant {
  std::string name;
  std::vector<TokenDigest> tokens;
  uint64_t memory = 0;         // device memory, all its sessions (0: --client_memory)
  uint32_t max_sessions = 0;   // at once (0: --max_sessions_per_client)
  double transfer_share = 1;   // of --max_transfer_bytes, in (0, 1]
  uint32_t weight = 1;         // of device time, in [1, kMaxWeight]
};

class TenantTable {
 public:
  static constexpr uint32_t kMaxWeight = 1000;
  static constexpr size_t kMaxTenants = 10000;
  static constexpr size_t kMaxFileBytes = 16 << 20;

  // Reads and checks the tenants file at `path`. InvalidArgument naming the file, line and key
  // for anything malformed (unknown keys included); NotFound / PermissionDenied when it cannot
  // be read.
  static absl::StatusOr<std::shared_ptr<const TenantTable>> Load(const std::string& path);
  // The same for `text`, named `source` in messages.
  static absl::StatusOr<std::shared_ptr<const TenantTable>> Parse(std::string_view text,
                                                                   std::string_view source);

  // The tenant whose token `token` is, or null. Compares against every digest of every tenant
  // whatever matches, so its time does not depend on which token, if any, matched.
  const Tenant* Authenticate(std::string_view token) const;
  // The tenant named `name`, or null.
  const Tenant* Find(std::string_view name) const;
  // Whether `tenant` (by name) still exists and still accepts the token whose digest is
  // `credential` (FormatTokenDigest's form).
  const Tenant* Accepts(std::string_view tenant, std::string_view credential) const;
  const std::vector<Tenant>& tenants() const { return tenants_; }

  // The principal of `tenant`'s sessions, opened with the token of digest `digest`; its
  // transfer share applies to a budget of `transfer_budget` bytes.
  static Principal PrincipalOf(const Tenant& tenant, const TokenDigest& digest,
                               uint64_t transfer_budget);
  static ClientLimits LimitsOf(const Tenant& tenant, uint64_t transfer_budget);

 private:
  std::vector<Tenant> tenants_;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_TENANTS_H_
