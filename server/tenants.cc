#include "sluice/server/tenants.h"

#include <algorithm>
#include <cmath>
#include <toml++/toml.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sluice/base/byte_size.h"
#include "sluice/base/small_file.h"
#include "sluice/base/status_macros.h"

namespace sluice {
namespace {

// "tenants.toml:12:3"
std::string Where(std::string_view source, const toml::source_region& region) {
  return absl::StrFormat("%s:%d:%d", source, region.begin.line, region.begin.column);
}

bool ValidName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_' || c == '.';
  });
}

// A byte count: an integer, or a string as the daemon's flags take ("16G").
absl::StatusOr<uint64_t> Bytes(const toml::node& node, const std::string& where) {
  if (const auto* n = node.as_integer()) {
    if (n->get() > 0) return static_cast<uint64_t>(n->get());
  } else if (const auto* text = node.as_string()) {
    ByteSize size;
    std::string error;
    if (AbslParseFlag(text->get(), &size, &error) && size.bytes > 0) return size.bytes;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: expected a positive byte count (an integer, or a string such as \"16G\")", where));
}

absl::StatusOr<Tenant> ParseTenant(std::string_view source, std::string_view name,
                                   const toml::table& table) {
  Tenant tenant;
  tenant.name = std::string(name);
  const std::string at = Where(source, table.source());
  if (!ValidName(name)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: tenant name \"%s\" must be 1 to 64 letters, digits, '-', '_' or '.'", at, name));
  }
  bool has_tokens = false;
  for (const auto& [key, node] : table) {
    const std::string where = absl::StrFormat("%s: tenants.%s.%s", Where(source, node.source()),
                                              name, key.str());
    if (key == "tokens") {
      const toml::array* tokens = node.as_array();
      if (tokens == nullptr || tokens->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": expected a non-empty array of token digests"));
      }
      for (const toml::node& token : *tokens) {
        const auto* text = token.as_string();
        absl::StatusOr<TokenDigest> digest =
            text != nullptr ? ParseTokenDigest(text->get())
                            : absl::InvalidArgumentError("a token digest is a string");
        if (!digest.ok()) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: %s", Where(source, token.source()), digest.status().message()));
        }
        tenant.tokens.push_back(*digest);
      }
      has_tokens = true;
    } else if (key == "memory") {
      absl::StatusOr<uint64_t> bytes = Bytes(node, where);
      if (!bytes.ok()) return bytes.status();
      tenant.memory = *bytes;
    } else if (key == "max_sessions") {
      const auto* n = node.as_integer();
      if (n == nullptr || n->get() < 1 || n->get() > (int64_t{1} << 20)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": expected an integer in [1, 1048576]"));
      }
      tenant.max_sessions = static_cast<uint32_t>(n->get());
    } else if (key == "transfer_share") {
      const std::optional<double> share = node.value<double>();
      if (!share.has_value() || !(*share > 0) || *share > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": expected a fraction of --max_transfer_bytes in (0, 1], such as 0.25"));
      }
      tenant.transfer_share = *share;
    } else if (key == "weight") {
      const auto* n = node.as_integer();
      if (n == nullptr || n->get() < 1 || n->get() > TenantTable::kMaxWeight) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: expected an integer weight in [1, %d]", where, TenantTable::kMaxWeight));
      }
      tenant.weight = static_cast<uint32_t>(n->get());
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown key (a tenant has tokens, memory, max_sessions, transfer_share and "
          "weight)",
          where));
    }
  }
  if (!has_tokens) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: tenant \"%s\" has no tokens (tokens = [\"sha256:...\"])", at, name));
  }
  return tenant;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const TenantTable>> TenantTable::Load(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(path, kMaxFileBytes, "the tenants file"));
  return Parse(text, path);
}

absl::StatusOr<std::shared_ptr<const TenantTable>> TenantTable::Parse(std::string_view text,
                                                                      std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& error) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s", Where(source, error.source()), error.description()));
  }
  auto table = std::make_shared<TenantTable>();
  absl::flat_hash_map<std::string, std::string> owner_of;  // a token digest's tenant
  for (const auto& [key, node] : root) {
    if (key != "tenants") {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: unknown key \"%s\" (the file holds one table, [tenants.NAME] per tenant)",
          Where(source, node.source()), key.str()));
    }
    const toml::table* tenants = node.as_table();
    if (tenants == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: tenants must be a table of tenants ([tenants.NAME])", Where(source, node.source())));
    }
    for (const auto& [name, entry] : *tenants) {
      const toml::table* fields = entry.as_table();
      if (fields == nullptr) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: tenants.%s must be a table ([tenants.%s])", Where(source, entry.source()),
            name.str(), name.str()));
      }
      absl::StatusOr<Tenant> tenant = ParseTenant(source, name.str(), *fields);
      if (!tenant.ok()) return tenant.status();
      for (const TokenDigest& digest : tenant->tokens) {
        auto [it, inserted] = owner_of.emplace(FormatTokenDigest(digest), tenant->name);
        if (!inserted) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: tenants %s and %s share a token digest; every token belongs to one tenant",
              Where(source, fields->source()), it->second, tenant->name));
        }
      }
      table->tenants_.push_back(*std::move(tenant));
      if (table->tenants_.size() > kMaxTenants) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: more than %d tenants", source, kMaxTenants));
      }
    }
  }
  if (table->tenants_.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: no tenants ([tenants.NAME] with tokens = [\"sha256:...\"]); without tenants, run "
        "the daemon without --tenants_file",
        source));
  }
  return std::shared_ptr<const TenantTable>(std::move(table));
}

const Tenant* TenantTable::Authenticate(std::string_view token) const {
  const TokenDigest presented = DigestToken(token);
  const Tenant* found = nullptr;
  for (const Tenant& tenant : tenants_) {
    for (const TokenDigest& digest : tenant.tokens) {
      // Every digest is compared, whatever matched before; the branch-free select keeps the
      // loop's time the same.
      const bool equal = DigestsEqual(presented, digest);
      const uintptr_t mask = -static_cast<uintptr_t>(equal);
      found = reinterpret_cast<const Tenant*>(
          (reinterpret_cast<uintptr_t>(&tenant) & mask) |
          (reinterpret_cast<uintptr_t>(found) & ~mask));
    }
  }
  return found;
}

const Tenant* TenantTable::Find(std::string_view name) const {
  for (const Tenant& tenant : tenants_) {
    if (tenant.name == name) return &tenant;
  }
  return nullptr;
}

const Tenant* TenantTable::Accepts(std::string_view tenant, std::string_view credential) const {
  const Tenant* found = Find(tenant);
  if (found == nullptr) return nullptr;
  for (const TokenDigest& digest : found->tokens) {
    if (FormatTokenDigest(digest) == credential) return found;
  }
  return nullptr;
}

ClientLimits TenantTable::LimitsOf(const Tenant& tenant, uint64_t transfer_budget) {
  ClientLimits limits;
  limits.memory = tenant.memory;
  limits.max_sessions = tenant.max_sessions;
  limits.transfer_bytes = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::floor(tenant.transfer_share * transfer_budget)));
  limits.weight = tenant.weight;
  return limits;
}

Principal TenantTable::PrincipalOf(const Tenant& tenant, const TokenDigest& digest,
                                   uint64_t transfer_budget) {
  return Principal{.key = tenant.name,
                   .tenant = tenant.name,
                   .credential = FormatTokenDigest(digest),
                   .limits = LimitsOf(tenant, transfer_budget)};
}

}  // namespace sluice
