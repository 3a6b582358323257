// A daemon shared by tenants, tested against the real sluiced on loopback: bearer tokens,
// per-tenant quotas and views, reloading the tenants file, TLS and mutual TLS (certificates
// made here with openssl), and the loopback rule for a daemon without tenants.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/token.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/client/server_info.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/http_get.h"
#include "tests/testing/raw_session.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Code = absl::StatusCode;

constexpr char kTokenA[] = "token-of-team-a-0123456789";
constexpr char kTokenA2[] = "second-token-of-team-a";
constexpr char kTokenB[] = "token-of-team-b-9876543210";

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

std::string Digest(const std::string& token) { return FormatTokenDigest(DigestToken(token)); }

// team-a: 8 MiB of buffers, 2 sessions, an eighth of the transfer budget, weight 3.
// team-b: the daemon's defaults. With `a_tokens` false, team-a is left out.
std::string TenantsFile(bool with_a = true, bool with_a2 = true) {
  std::string text;
  if (with_a) {
    absl::StrAppend(&text, "[tenants.team-a]\ntokens = [\"", Digest(kTokenA), "\"",
                    with_a2 ? absl::StrCat(", \"", Digest(kTokenA2), "\"") : "", "]\n",
                    "memory = \"8M\"\nmax_sessions = 2\ntransfer_share = 0.125\nweight = 3\n\n");
  }
  absl::StrAppend(&text, "[tenants.team-b]\ntokens = [\"", Digest(kTokenB), "\"]\n");
  return text;
}

absl::StatusOr<std::unique_ptr<RemoteDispatch>> ConnectAs(const std::string& target,
                                                          const std::string& token,
                                                          ClientCredentials credentials = {}) {
  credentials.token = token;
  return RemoteDispatch::Connect({.target = target,
                                  .client_name = "tenants-test",
                                  .connect_timeout = absl::Seconds(20),
                                  .credentials = credentials});
}

class TenantsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.path();
    tenants_ = dir_ + "/tenants.toml";
    WriteFile(tenants_, TenantsFile());
    ASSERT_OK_AND_ASSIGN(daemon_, DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                                        "--max_transfer_bytes=64M",
                                                        "--tenants_file=" + tenants_}));
  }

  absl::StatusOr<v1::GetInfoResponse> InfoAs(const std::string& token) {
    ClientCredentials credentials;
    credentials.token = token;
    return GetServerInfo(daemon_->address(), absl::Seconds(20), credentials);
  }

  const ScopedTempDir temp_{"tenants"};  // outlives the daemon, which reads from it
  std::string dir_;
  std::string tenants_;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(TenantsTest, TheStartUpLineSaysWhoMayUseTheDaemon) {
  EXPECT_THAT(daemon_->process().Stderr(),
              HasSubstr("(plaintext; 2 tenants from " + tenants_ +
                        " (every call needs a tenant's token))"));
}

TEST_F(TenantsTest, NoTokenOrAWrongTokenIsUnauthenticatedAndOpensNothing) {
  for (const std::string& token :
       {std::string(""), std::string("not-a-token"), std::string(kTokenA) + "x",
        Digest(kTokenA)}) {
    EXPECT_THAT(ConnectAs(daemon_->address(), token),
                StatusIs(Code::kUnauthenticated, HasSubstr("refused the session")))
        << "token \"" << token << "\"";
    EXPECT_THAT(InfoAs(token), StatusIs(Code::kUnauthenticated)) << "token \"" << token << "\"";
  }
  ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse info, InfoAs(kTokenB));
  EXPECT_EQ(info.tenant().name(), "team-b");
  EXPECT_EQ(info.tenant().sessions(), 0u);
  EXPECT_THAT(daemon_->process().Stderr(), Not(HasSubstr("opened by")))
      << "a refused stream opens no session";
}

TEST(RefusedTokensTest, AreCountedByReasonAndLoggedRateLimitedWithoutTheToken) {
  const ScopedTempDir temp("refused");
  const std::string tenants = temp.path() + "/tenants.toml";
  WriteFile(tenants, TenantsFile());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=256M",
                                             "--metrics_listen=127.0.0.1:0",
                                             "--tenants_file=" + tenants}));
  const std::string metrics = daemon->metrics_address();
  ASSERT_FALSE(metrics.empty()) << daemon->process().Stderr();
  const auto refused = [&](const std::string& reason) {
    absl::StatusOr<std::string> text = HttpGet(metrics, "/metrics");
    EXPECT_OK(text.status());
    return text.ok() ? ParseExposition(*text)[absl::StrCat(
                           "sluice_auth_failures_total{reason=\"", reason, "\"}")]
                     : -1;
  };
  EXPECT_EQ(refused("no_token"), 0);
  EXPECT_EQ(refused("unknown_token"), 0);

  // One session and one GetInfo without a token; then a secret that is nobody's, 60 times.
  constexpr char kSecret[] = "a-secret-that-is-nobodys-token-4711";
  ClientCredentials none;
  EXPECT_THAT(ConnectAs(daemon->address(), ""), StatusIs(Code::kUnauthenticated));
  EXPECT_THAT(GetServerInfo(daemon->address(), absl::Seconds(20), none),
              StatusIs(Code::kUnauthenticated));
  ClientCredentials wrong;
  wrong.token = kSecret;
  EXPECT_THAT(ConnectAs(daemon->address(), kSecret), StatusIs(Code::kUnauthenticated));
  for (int i = 0; i < 59; ++i) {
    ASSERT_THAT(GetServerInfo(daemon->address(), absl::Seconds(20), wrong),
                StatusIs(Code::kUnauthenticated));
  }
  // A tenant's own token is no failure.
  ASSERT_OK(GetServerInfo(daemon->address(), absl::Seconds(20), [] {
              ClientCredentials b;
              b.token = kTokenB;
              return b;
            }()).status());
  EXPECT_EQ(refused("no_token"), 2);
  EXPECT_EQ(refused("unknown_token"), 60);

  const std::string log = daemon->process().Stderr();
  EXPECT_THAT(log, HasSubstr("refused a call: it carries no token"));
  EXPECT_THAT(log, HasSubstr("refused a call: its token is not one of this daemon's tenants'"));
  EXPECT_THAT(log, HasSubstr("127.0.0.1")) << "the line names the client";
  EXPECT_THAT(log, Not(HasSubstr(kSecret))) << "a token is never logged";
  // 62 refusals from one host in well under a second: a burst is logged, not every one.
  int lines = 0;
  for (size_t at = log.find("refused a call"); at != std::string::npos;
       at = log.find("refused a call", at + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 2);
  EXPECT_LT(lines, 62);
}

TEST_F(TenantsTest, EachTenantHasItsOwnQuotasAndSeesOnlyItsOwnUse) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> a, ConnectAs(daemon_->address(), kTokenA));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> a2,
                       ConnectAs(daemon_->address(), kTokenA2));
  // Sessions: two for team-a, whichever token.
  EXPECT_THAT(ConnectAs(daemon_->address(), kTokenA),
              StatusIs(Code::kResourceExhausted,
                       HasSubstr("this tenant already holds 2 sessions, the most it may hold")));
  // Memory: 8 MiB for all of team-a's sessions together, stated with the use.
  ASSERT_OK_AND_ASSIGN(Resource six, a->Allocate(6 << 20));
  absl::StatusOr<Resource> more = a2->Allocate(4 << 20);
  EXPECT_THAT(more, StatusIs(Code::kResourceExhausted,
                             HasSubstr("the tenant's memory quota (memory in the tenants file): "
                                       "4194304 bytes requested, 6291456 of 8388608 in use")));
  // team-b is not held back by team-a's use.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> b, ConnectAs(daemon_->address(), kTokenB));
  ASSERT_OK_AND_ASSIGN(Resource big, b->Allocate(32 << 20));

  ASSERT_OK_AND_ASSIGN(Resource two, a2->Allocate(2 << 20));
  (void)two;
  ASSERT_OK_AND_ASSIGN(Resource b_buffer, b->Allocate(20 << 20));
  std::vector<uint8_t> twenty(20 << 20, 7);
  EXPECT_OK(b->Upload(b_buffer, twenty)) << "team-b may move 20 MiB at once";

  ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse info_a, InfoAs(kTokenA));
  EXPECT_EQ(info_a.tenant().name(), "team-a");
  EXPECT_EQ(info_a.tenant().sessions(), 2u);
  EXPECT_EQ(info_a.tenant().max_sessions(), 2u);
  EXPECT_EQ(info_a.tenant().memory_used(), uint64_t{8} << 20);
  EXPECT_EQ(info_a.tenant().memory_limit(), uint64_t{8} << 20);
  EXPECT_EQ(info_a.tenant().transfer_bytes_limit(), uint64_t{8} << 20);
  EXPECT_EQ(info_a.tenant().weight(), 3u);
  // Nothing of the others: no daemon-wide counts, no other tenant's name.
  EXPECT_EQ(info_a.active_sessions(), 0u);
  EXPECT_EQ(info_a.sessions_opened(), 0u);
  ASSERT_EQ(info_a.devices_size(), 1);
  EXPECT_EQ(info_a.devices(0).memory().used(), 0u);
  EXPECT_FALSE(info_a.devices(0).has_counters());
  EXPECT_THAT(info_a.SerializeAsString(), Not(HasSubstr("team-b")));
  ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse info_b, InfoAs(kTokenB));
  EXPECT_EQ(info_b.tenant().name(), "team-b");
  EXPECT_EQ(info_b.tenant().sessions(), 1u);
  EXPECT_EQ(info_b.tenant().memory_used(), uint64_t{52} << 20);
  EXPECT_EQ(info_b.tenant().weight(), 1u);
  EXPECT_THAT(info_b.SerializeAsString(), Not(HasSubstr("team-a")));
  (void)six;
  (void)big;
}

TEST_F(TenantsTest, ATenantsTransferShareBoundsWhatItsRequestsHold) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> a, ConnectAs(daemon_->address(), kTokenA));
  ASSERT_OK_AND_ASSIGN(Resource buffer, a->Allocate(8 << 20));
  // 8 MiB is team-a's share of the 64 MiB budget; a 7 MiB upload fits (its data, and its
  // blocks' places in the daemon's list), a 6 MiB read (which holds its bytes and a chunk more)
  // too, and a whole read, needing 9 MiB, is refused (its own message is counted in the share
  // as it waits).
  std::vector<uint8_t> bytes(7 << 20, 3);
  EXPECT_OK(a->Upload(buffer, bytes));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> back, a->DownloadRange(buffer, 0, 6 << 20));
  EXPECT_EQ(back.size(), size_t{6} << 20);
  std::vector<uint8_t> output;
  EXPECT_THAT(a->DownloadInto(buffer, &output),
              StatusIs(Code::kResourceExhausted,
                       ::testing::ContainsRegex(
                           "this tenant's sessions hold [0-9]+ of 8388608 \\(its transfer_share "
                           "of --max_transfer_bytes\\)")));
  EXPECT_OK(a->Ping()) << "a refused request leaves the session open";
}

TEST_F(TenantsTest, ReloadingEndsTheSessionsOfRemovedTenantsAndTokensOnly) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> a1, ConnectAs(daemon_->address(), kTokenA));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> a2,
                       ConnectAs(daemon_->address(), kTokenA2));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> b, ConnectAs(daemon_->address(), kTokenB));
  ASSERT_OK_AND_ASSIGN(Resource kept, b->Allocate(4096));
  // A file that does not parse changes nothing.
  WriteFile(tenants_, "[tenants.team-b\n");
  ASSERT_EQ(::kill(daemon_->process().pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil(absl::Seconds(20), [&] {
    return absl::StrContains(daemon_->process().Stderr(), "as it cannot be used");
  })) << daemon_->process().Stderr();
  EXPECT_OK(a1->Ping());
  EXPECT_OK(a2->Ping());

  // team-a's second token is revoked: only the session opened with it ends.
  WriteFile(tenants_, TenantsFile(/*with_a=*/true, /*with_a2=*/false));
  ASSERT_EQ(::kill(daemon_->process().pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil(absl::Seconds(20), [&] {
    return absl::StrContains(daemon_->process().Stderr(), "received SIGHUP: 2 tenants");
  })) << daemon_->process().Stderr();
  EXPECT_THAT(a2->Ping(), StatusIs(Code::kUnauthenticated,
                                   HasSubstr("no longer lists this session's tenant or the token")));
  EXPECT_OK(a1->Ping());
  EXPECT_THAT(ConnectAs(daemon_->address(), kTokenA2), StatusIs(Code::kUnauthenticated));

  // A session of team-a that lost its connection waits to be resumed.
  {
    // The session the reload ended holds its place among team-a's sessions until its teardown
    // (on the daemon's executor) has run: the open waits for that, bounded.
    std::unique_ptr<RawSession> parked;
    absl::Status opened;
    ASSERT_TRUE(WaitUntil(absl::Seconds(20), [&] {
      parked = std::make_unique<RawSession>(daemon_->address(), kTokenA);
      opened = parked->OpenResumable().status();
      return !absl::IsResourceExhausted(opened);
    })) << opened;
    ASSERT_OK(opened);
    ASSERT_OK(parked->Allocate(4096).status());
    parked->Cancel();
  }
  ASSERT_TRUE(WaitUntil(absl::Seconds(20), [&] {
    return absl::StrContains(daemon_->process().Stderr(), "lost its stream");
  })) << daemon_->process().Stderr();

  // team-a is removed: its sessions end (the one waiting to be resumed too); team-b's session
  // and buffer live on.
  WriteFile(tenants_, TenantsFile(/*with_a=*/false));
  ASSERT_EQ(::kill(daemon_->process().pid(), SIGHUP), 0);
  ASSERT_TRUE(WaitUntil(absl::Seconds(20), [&] {
    return absl::StrContains(daemon_->process().Stderr(), "received SIGHUP: 1 tenants");
  })) << daemon_->process().Stderr();
  EXPECT_THAT(a1->Ping(), StatusIs(Code::kUnauthenticated));
  EXPECT_THAT(ConnectAs(daemon_->address(), kTokenA), StatusIs(Code::kUnauthenticated));
  EXPECT_THAT(daemon_->process().Stderr(),
              HasSubstr("closed (the daemon's tenants file, reloaded, no longer lists its "
                        "tenant or the token it opened with)"))
      << "the parked session is freed too";
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> bytes, b->DownloadRange(kept, 0, 8));
  EXPECT_EQ(bytes, std::vector<uint8_t>(8, 0));
}

TEST_F(TenantsTest, TheCliTakesTheTokenFromTheEnvironmentOrAFlag) {
  const std::string sluice = BinaryPath("sluice");
  ProgramRun denied = RunProgram({sluice, "info", "--server=" + daemon_->address()});
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_THAT(denied.err, HasSubstr("UNAUTHENTICATED"));
  ProgramRun info = RunProgram(
      {"/usr/bin/env", absl::StrCat("SLUICE_TOKEN=", kTokenB), sluice, "info",
       "--server=" + daemon_->address()});
  EXPECT_EQ(info.exit_code, 0) << info.err;
  EXPECT_THAT(info.out, HasSubstr("tenant:    team-b: 0 sessions"));
  EXPECT_THAT(info.out, HasSubstr("resume:    a resumable session waits 60.0 s"));
  ProgramRun flag = RunProgram(
      {sluice, "info", "--server=" + daemon_->address(), absl::StrCat("--token=", kTokenA)});
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_THAT(flag.out, HasSubstr("tenant:    team-a: 0 sessions of at most 2"));
}

TEST(TokenCliTest, ANewTokenHashesToTheDigestPrintedWithIt) {
  const std::string sluice = BinaryPath("sluice");
  const ProgramRun made = RunProgram({sluice, "token"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const size_t t = made.out.find("token:  ");
  const size_t d = made.out.find("digest: ");
  ASSERT_NE(t, std::string::npos);
  ASSERT_NE(d, std::string::npos);
  const std::string token = made.out.substr(t + 8, made.out.find('\n', t) - t - 8);
  const std::string digest = made.out.substr(d + 8, made.out.find('\n', d) - d - 8);
  EXPECT_EQ(digest, Digest(token));
  const ScopedTempDir temp("tenants");
  const std::string dir = temp.path();
  WriteFile(dir + "/tokens", token + "\n" + kTokenB + "\n");
  const ProgramRun hashed =
      RunProgram({"/bin/sh", "-c", sluice + " token hash < " + dir + "/tokens"});
  ASSERT_EQ(hashed.exit_code, 0) << hashed.err;
  EXPECT_EQ(hashed.out, digest + "\n" + Digest(kTokenB) + "\n");
  // CRLF line ends are line ends; a line a client could not send as a token (a blank, a NUL,
  // a stream without line ends) is refused naming its line, not hashed or read without end.
  WriteFile(dir + "/crlf", token + "\r\n\r\n");
  const ProgramRun crlf = RunProgram({"/bin/sh", "-c", sluice + " token hash < " + dir + "/crlf"});
  ASSERT_EQ(crlf.exit_code, 0) << crlf.err;
  EXPECT_EQ(crlf.out, digest + "\n");
  WriteFile(dir + "/blank", token + "\n  \n");
  const ProgramRun blank =
      RunProgram({"/bin/sh", "-c", sluice + " token hash < " + dir + "/blank"});
  EXPECT_EQ(blank.exit_code, 2);
  EXPECT_THAT(blank.err, HasSubstr("line 2: the token holds byte 0x20"));
  const ProgramRun zeros = RunProgram({"/bin/sh", "-c", sluice + " token hash < /dev/zero"});
  EXPECT_EQ(zeros.exit_code, 2);
  EXPECT_THAT(zeros.err, HasSubstr("line 1: the token is"));
}

TEST(LoopbackRuleTest, WithoutTenantsTheDaemonServesOnlyLoopbackUnlessTold) {
  const ProgramRun refused =
      RunProgram({BinaryPath("sluiced"), "--backend=cpu", "--listen=0.0.0.0:0"}, absl::Seconds(60));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("without --tenants_file the daemon serves only loopback"));

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> loopback,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G"}));
  EXPECT_THAT(loopback->process().Stderr(), HasSubstr("no tenants: unauthenticated, loopback only"));

  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ChildProcess> open,
      ChildProcess::Spawn({BinaryPath("sluiced"), "--backend=cpu", "--cpu_memory=1G",
                           "--listen=0.0.0.0:0", "--allow_unauthenticated"}));
  ASSERT_OK_AND_ASSIGN(std::string line, open->ReadLine(absl::Seconds(30)));
  EXPECT_THAT(line, HasSubstr("sluiced listening on 0.0.0.0:"));
  EXPECT_THAT(open->Stderr(), HasSubstr("UNAUTHENTICATED on a non-loopback address"));
  // It serves loopback clients too.
  const std::string port = line.substr(line.rfind(':') + 1);
  ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse info,
                       GetServerInfo("127.0.0.1:" + port, absl::Seconds(20)));
  EXPECT_FALSE(info.has_tenant());
}

// ---- TLS ------------------------------------------------------------------------------------

// A CA, a certificate for the daemon (localhost) and one for a client, made with openssl.
class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_.path();
    WriteFile(dir_ + "/server.ext", "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    const auto openssl = [&](std::vector<std::string> args) {
      args.insert(args.begin(), "openssl");
      args.insert(args.begin(), "/usr/bin/env");
      const ProgramRun run = RunProgram(args, absl::Seconds(60));
      ASSERT_EQ(run.exit_code, 0) << run.err;
    };
    const std::vector<std::string> key = {"-newkey", "ec", "-pkeyopt",
                                          "ec_paramgen_curve:prime256v1", "-nodes"};
    auto with_key = [&](std::vector<std::string> head, std::vector<std::string> tail) {
      head.insert(head.end(), key.begin(), key.end());
      head.insert(head.end(), tail.begin(), tail.end());
      return head;
    };
    openssl(with_key({"req", "-x509"}, {"-keyout", dir_ + "/ca.key", "-out", dir_ + "/ca.pem",
                                        "-days", "2", "-subj", "/CN=sluice test CA"}));
    for (const std::string name : {"server", "client"}) {
      openssl(with_key({"req"}, {"-keyout", dir_ + "/" + name + ".key", "-out",
                                 dir_ + "/" + name + ".csr", "-subj",
                                 name == "server" ? "/CN=localhost" : "/CN=sluice test client"}));
      std::vector<std::string> sign = {"x509", "-req", "-in", dir_ + "/" + name + ".csr", "-CA",
                                       dir_ + "/ca.pem", "-CAkey", dir_ + "/ca.key",
                                       "-CAcreateserial", "-out", dir_ + "/" + name + ".pem",
                                       "-days", "2"};
      if (name == "server") {
        sign.push_back("-extfile");
        sign.push_back(dir_ + "/server.ext");
      }
      openssl(sign);
    }
  }

  ClientCredentials Tls(bool with_client_certificate) const {
    ClientCredentials credentials;
    credentials.tls_ca = dir_ + "/ca.pem";
    credentials.tls_server_name = "localhost";
    if (with_client_certificate) {
      credentials.tls_cert = dir_ + "/client.pem";
      credentials.tls_key = dir_ + "/client.key";
    }
    return credentials;
  }

  const ScopedTempDir temp_{"tls"};
  std::string dir_;
};

TEST_F(TlsTest, ATlsDaemonServesTlsClientsOnly) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--tls_cert=" + dir_ + "/server.pem",
                                             "--tls_key=" + dir_ + "/server.key"}));
  EXPECT_THAT(daemon->process().Stderr(), HasSubstr("(TLS; no tenants"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> d,
                       ConnectAs(daemon->address(), "", Tls(false)));
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(64));
  EXPECT_OK(d->Upload(r, std::vector<uint8_t>(64, 9)));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> back, d->Download(r));
  EXPECT_EQ(back, std::vector<uint8_t>(64, 9));
  // A plaintext client, or one that trusts another CA, cannot connect.
  ClientCredentials plain;
  EXPECT_THAT(RemoteDispatch::Connect({.target = daemon->address(),
                                       .connect_timeout = absl::Seconds(5),
                                       .credentials = plain}),
              StatusIs(Code::kUnavailable));
  ClientCredentials wrong_ca = Tls(false);
  wrong_ca.tls_ca = dir_ + "/client.pem";  // not a CA of the daemon's certificate
  EXPECT_THAT(RemoteDispatch::Connect({.target = daemon->address(),
                                       .connect_timeout = absl::Seconds(5),
                                       .credentials = wrong_ca}),
              StatusIs(Code::kUnavailable));
  ClientCredentials missing = Tls(false);
  missing.tls_ca = dir_ + "/no-such.pem";
  EXPECT_THAT(ConnectAs(daemon->address(), "", missing),
              StatusIs(Code::kInvalidArgument, HasSubstr("no-such.pem")));
}

TEST_F(TlsTest, MutualTlsRefusesAClientWithoutACertificate) {
  const std::string tenants = dir_ + "/tenants.toml";
  WriteFile(tenants, TenantsFile());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--tenants_file=" + tenants,
                                             "--tls_cert=" + dir_ + "/server.pem",
                                             "--tls_key=" + dir_ + "/server.key",
                                             "--tls_client_ca=" + dir_ + "/ca.pem"}));
  EXPECT_THAT(daemon->process().Stderr(), HasSubstr("(mutual TLS; 2 tenants"));
  EXPECT_THAT(RemoteDispatch::Connect({.target = daemon->address(),
                                       .connect_timeout = absl::Seconds(5),
                                       .credentials = [&] {
                                         ClientCredentials c = Tls(false);
                                         c.token = kTokenB;
                                         return c;
                                       }()}),
              StatusIs(Code::kUnavailable));
  // With its certificate, and still a tenant's token.
  EXPECT_THAT(ConnectAs(daemon->address(), "", Tls(true)), StatusIs(Code::kUnauthenticated));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> d,
                       ConnectAs(daemon->address(), kTokenB, Tls(true)));
  EXPECT_OK(d->Ping());
  ClientCredentials info = Tls(true);
  info.token = kTokenB;
  ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse response,
                       GetServerInfo(daemon->address(), absl::Seconds(20), info));
  EXPECT_EQ(response.tenant().name(), "team-b");
}

TEST_F(TlsTest, ADaemonWhoseCertificateCannotBeReadDoesNotStart) {
  const ProgramRun run = RunProgram({BinaryPath("sluiced"), "--backend=cpu", "--listen=127.0.0.1:0",
                                     "--tls_cert=" + dir_ + "/missing.pem",
                                     "--tls_key=" + dir_ + "/server.key"},
                                    absl::Seconds(60));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("missing.pem"));
  // A key that is not the certificate's, a file that holds no certificate, and a key a
  // passphrase locks are said to be so (they were "cannot listen ... (in use, or not a local
  // address)", exit 1, with the reason only in gRPC's own log).
  WriteFile(dir_ + "/garbage.pem", "not a certificate\n");
  const ProgramRun locked_key = RunProgram(
      {"/usr/bin/env", "openssl", "pkey", "-in", dir_ + "/server.key", "-aes256", "-passout",
       "pass:sluice", "-out", dir_ + "/locked.key"},
      absl::Seconds(60));
  ASSERT_EQ(locked_key.exit_code, 0) << locked_key.err;
  using Case = std::tuple<std::string, std::string, std::string>;
  for (const auto& [cert, key, said] : std::vector<Case>{
           {"server.pem", "client.key", "is not the key of the certificate"},
           {"garbage.pem", "server.key", "holds no PEM certificate"},
           {"server.pem", "locked.key", "holds no PEM private key (or one a passphrase locks)"}}) {
    const ProgramRun bad = RunProgram(
        {BinaryPath("sluiced"), "--backend=cpu", "--listen=127.0.0.1:0",
         "--tls_cert=" + dir_ + "/" + cert, "--tls_key=" + dir_ + "/" + key},
        absl::Seconds(60));
    EXPECT_EQ(bad.exit_code, 2) << cert << " " << key << ": " << bad.err;
    EXPECT_THAT(bad.err, HasSubstr(said)) << cert << " " << key;
  }
}

}  // namespace
}  // namespace sluice::testing
