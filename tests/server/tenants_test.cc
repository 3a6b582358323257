#include "sluice/server/tenants.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

std::string Digest(const std::string& token) { return FormatTokenDigest(DigestToken(token)); }

std::string TwoTenants() {
  return absl::StrCat(R"(# two teams
[tenants.team-a]
tokens = [")", Digest("token-a1"), R"(", ")", Digest("token-a2"), R"("]
memory = "64M"
max_sessions = 3
transfer_share = 0.25
weight = 3

[tenants."team.b"]
tokens = [")", Digest("token-b"), R"("]
)");
}

TEST(TenantTableTest, ReadsTenantsWithTheirLimits) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const TenantTable> table,
                       TenantTable::Parse(TwoTenants(), "tenants.toml"));
  ASSERT_EQ(table->tenants().size(), 2u);
  const Tenant* a = table->Find("team-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->tokens.size(), 2u);
  EXPECT_EQ(a->memory, uint64_t{64} << 20);
  EXPECT_EQ(a->max_sessions, 3u);
  EXPECT_EQ(a->weight, 3u);
  const Tenant* b = table->Find("team.b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->memory, 0u) << "unset: the daemon's default";
  EXPECT_EQ(b->max_sessions, 0u);
  EXPECT_EQ(b->weight, 1u);
  EXPECT_EQ(b->transfer_share, 1.0);

  const ClientLimits limits = TenantTable::LimitsOf(*a, 1000);
  EXPECT_EQ(limits.memory, uint64_t{64} << 20);
  EXPECT_EQ(limits.max_sessions, 3u);
  EXPECT_EQ(limits.transfer_bytes, 250u);
  EXPECT_EQ(limits.weight, 3u);
}

TEST(TenantTableTest, ATokenFindsItsTenantAndNothingElseDoes) {
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<const TenantTable> table,
                       TenantTable::Parse(TwoTenants(), "tenants.toml"));
  ASSERT_NE(table->Authenticate("token-a1"), nullptr);
  EXPECT_EQ(table->Authenticate("token-a1")->name, "team-a");
  EXPECT_EQ(table->Authenticate("token-a2")->name, "team-a");
  EXPECT_EQ(table->Authenticate("token-b")->name, "team.b");
  for (const std::string& wrong :
       {std::string(""), std::string("token-a"), std::string("token-a1 "),
        std::string("TOKEN-A1"), Digest("token-a1"), std::string(1000, 'x')}) {
    EXPECT_EQ(table->Authenticate(wrong), nullptr) << wrong;
  }
  EXPECT_NE(table->Accepts("team-a", Digest("token-a2")), nullptr);
  EXPECT_EQ(table->Accepts("team-a", Digest("token-b")), nullptr) << "another tenant's token";
  EXPECT_EQ(table->Accepts("team-c", Digest("token-a1")), nullptr);
}

TEST(TenantTableTest, MalformedFilesAreRefusedSayingWhere) {
  const std::string d = Digest("t");
  struct Case {
    std::string text;
    std::string says;
  };
  const Case cases[] = {
      {"[tenants.a\ntokens = []", "tenants.toml:1:"},  // TOML syntax
      {"", "no tenants"},
      {absl::StrCat("[tenants.a]\ntokens = [\"", d, "\"]\nwieght = 2\n"),
       "tenants.toml:3:10: tenants.a.wieght: unknown key"},
      {absl::StrCat("[other]\nx = 1\n"), "unknown key \"other\""},
      {"tenants = 3\n", "tenants must be a table"},
      {"[tenants]\na = 1\n", "tenants.a must be a table"},
      {"[tenants.a]\nmemory = \"1G\"\n", "has no tokens"},
      {"[tenants.a]\ntokens = []\n", "non-empty array"},
      {"[tenants.a]\ntokens = [\"plain-token\"]\n", "tenants.toml:2:11: a token digest is"},
      {"[tenants.a]\ntokens = [3]\n", "a token digest is a string"},
      {absl::StrCat("[tenants.a]\ntokens = [\"", d, "\"]\n[tenants.b]\ntokens = [\"", d,
                    "\"]\n"),
       "share a token digest"},
      {absl::StrCat("[tenants.a]\ntokens = [\"", d, "\"]\nweight = 0\n"), "weight in [1, 1000]"},
      {absl::StrCat("[tenants.a]\ntokens = [\"", d, "\"]\nweight = 1.5\n"), "weight"},
      {absl::StrCat("[tenants.a]\ntokens = [\"", d, "\"]\ntransfer_share = 1.5\n"), "(0, 1]"},
      {absl::StrCat("[tenants.a]\ntokens = [\"", d, "\"]\ntransfer_share = 0\n"), "(0, 1]"},
      {absl::StrCat("[tenants.a]\ntokens = [\"", d, "\"]\nmemory = \"lots\"\n"),
       "positive byte count"},
      {absl::StrCat("[tenants.a]\ntokens = [\"", d, "\"]\nmemory = -1\n"), "positive byte count"},
      {absl::StrCat("[tenants.a]\ntokens = [\"", d, "\"]\nmax_sessions = 0\n"), "[1, 1048576]"},
      {absl::StrCat("[tenants.\"a b\"]\ntokens = [\"", d, "\"]\n"), "tenant name \"a b\""},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(TenantTable::Parse(c.text, "tenants.toml"),
                StatusIs(Code::kInvalidArgument, HasSubstr(c.says)))
        << c.text;
  }
}

TEST(TenantTableTest, AFileThatCannotBeReadIsNotFound) {
  EXPECT_THAT(TenantTable::Load("/nonexistent/tenants.toml"),
              StatusIs(Code::kNotFound, HasSubstr("/nonexistent/tenants.toml")));
}

}  // namespace
}  // namespace sluice
