// Operating sluiced, tested against the real daemon on loopback: its Prometheus metrics
// (checked with promtool, counters that move with work), its JSON log lines, and sessions
// balanced over two daemons by gRPC's round_robin policy.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sluice/base/random.h"
#include "sluice/base/token.h"
#include "sluice/client/remote/channel.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/client/server_info.h"
#include "sluice/engine/device_factory.h"
#include "sluice/server/grpc/daemon.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/http_get.h"
#include "tests/testing/raw_session.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/wait.h"

#ifndef SLUICE_SOURCE_DIR
#error "SLUICE_SOURCE_DIR must name the source tree (for examples/)"
#endif

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Code = absl::StatusCode;

const std::string kExample = std::string(SLUICE_SOURCE_DIR) + "/examples/uninitialized.ifds";

// The metrics address a daemon logged at start ("metrics on http://HOST:PORT/metrics").
// The health-only address a daemon logged at start.
std::string HealthAddress(DaemonProcess& daemon) {
  const std::string log = daemon.process().Stderr();
  const std::string marker = "health checks (plaintext, health service only) on ";
  const size_t at = log.find(marker);
  if (at == std::string::npos) return "";
  const size_t start = at + marker.size();
  return log.substr(start, log.find('\n', start) - start);
}

std::map<std::string, double> Scrape(const std::string& address) {
  absl::StatusOr<std::string> text = HttpGet(address, "/metrics");
  EXPECT_OK(text.status());
  return text.ok() ? ParseExposition(*text) : std::map<std::string, double>{};
}

std::string NewPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/operations-", getpid(), "-", SecureRandom64(), "-",
                      name);
}

// What `sluice solve` prints for the example in-process: the answer every solve must print.
std::string ExpectedAnswer() {
  const ProgramRun run = RunProgram({BinaryPath("sluice"), "solve", kExample});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return run.out;
}

TEST(MetricsTest, TheExpositionPassesPromtoolAndItsCountersMoveWithWork) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon =
      DaemonProcess::Start({"--metrics_listen=127.0.0.1:0"});
  ASSERT_OK(daemon.status());
  const std::string metrics = (*daemon)->metrics_address();
  ASSERT_FALSE(metrics.empty()) << (*daemon)->process().Stderr();

  std::map<std::string, double> before = Scrape(metrics);
  EXPECT_EQ(before["sluice_sessions_opened_total"], 0);
  EXPECT_EQ(before["sluice_sessions_active"], 0);
  EXPECT_EQ(before["sluice_draining"], 0);
  EXPECT_GT(before["sluice_transfer_bytes_limit"], 0);
  ASSERT_TRUE(before.contains("sluice_upload_blocks_kept_bytes"));
  EXPECT_EQ(before["sluice_upload_blocks_kept_bytes"], 0) << "no upload has run";
  EXPECT_EQ(before["sluice_request_seconds_count{kind=\"execute\"}"], 0);

  // A solve through the daemon, and a request refused with a specific code.
  const ProgramRun solve = RunProgram(
      {BinaryPath("sluice"), "solve", kExample, "--server=" + (*daemon)->address()});
  ASSERT_EQ(solve.exit_code, 0) << solve.err;
  {
    RawSession raw((*daemon)->address());
    ASSERT_OK(raw.Open().status());
    v1::SessionRequest free;
    free.mutable_free()->set_handle(12345);
    EXPECT_THAT(raw.Call(free, 2), StatusIs(Code::kNotFound));
  }
  // The session's close is counted once its stream has ended.
  std::map<std::string, double> after;
  ASSERT_TRUE(WaitUntil(absl::Seconds(10), [&] {
    after = Scrape(metrics);
    return after["sluice_sessions_active"] == 0;
  }));
  EXPECT_EQ(after["sluice_sessions_opened_total"], 2);
  EXPECT_EQ(after["sluice_requests_total{code=\"OK\",kind=\"open\"}"], 2);
  EXPECT_GE(after["sluice_requests_total{code=\"OK\",kind=\"execute\"}"], 1);
  EXPECT_GE(after["sluice_requests_total{code=\"OK\",kind=\"allocate\"}"], 1);
  EXPECT_GE(after["sluice_requests_total{code=\"OK\",kind=\"upload\"}"], 1);
  EXPECT_EQ(after["sluice_requests_total{code=\"NOT_FOUND\",kind=\"free\"}"], 1);
  EXPECT_GE(after["sluice_request_seconds_count{kind=\"execute\"}"], 1);
  EXPECT_GE(after["sluice_request_queue_seconds_count{kind=\"allocate\"}"], 1);
  EXPECT_GT(after["sluice_received_bytes_total"], 0);
  EXPECT_GT(after["sluice_sent_bytes_total"], 0);
  EXPECT_GT(after["sluice_kernel_steps_total"], 0);
  EXPECT_GT(after["sluice_repeated_iterations_total"], 0);
  bool uploaded = false, peak = false;
  for (const auto& [series, value] : after) {
    if (absl::StartsWith(series, "sluice_device_uploaded_bytes_total{")) uploaded = value > 0;
    if (absl::StartsWith(series, "sluice_device_memory_peak_bytes{")) peak = value > 0;
    if (absl::StartsWith(series, "sluice_device_memory_used_bytes{")) {
      EXPECT_EQ(value, 0) << "every buffer was freed";
    }
    if (absl::StartsWith(series, "sluice_device_failures_total{")) {
      EXPECT_EQ(value, 0);
    }
  }
  EXPECT_TRUE(uploaded);
  EXPECT_TRUE(peak);
  EXPECT_EQ(after["sluice_upload_blocks_kept_bytes"], 0) << "the example's uploads are small";

  // An upload of two blocks and a bit: once it has run, both blocks are kept for the next.
  {
    absl::StatusOr<std::unique_ptr<RemoteDispatch>> remote =
        RemoteDispatch::Connect({.target = (*daemon)->address(), .client_name = "blocks"});
    ASSERT_OK(remote.status());
    constexpr uint64_t kBytes = (uint64_t{8} << 20) + 4096;
    absl::StatusOr<Resource> buffer = (*remote)->Allocate(kBytes);
    ASSERT_OK(buffer.status());
    const std::vector<uint8_t> data(kBytes, 0x5a);
    ASSERT_OK((*remote)->Upload(*buffer, data));
    EXPECT_TRUE(WaitUntil(absl::Seconds(10), [&] {
      return Scrape(metrics)["sluice_upload_blocks_kept_bytes"] == (8 << 20);
    })) << Scrape(metrics)["sluice_upload_blocks_kept_bytes"];
  }

  // Prometheus' own checker takes the exposition as it is served.
  absl::StatusOr<std::string> text = HttpGet(metrics, "/metrics");
  ASSERT_OK(text.status());
  const std::string file = NewPath("metrics.txt");
  std::ofstream(file) << *text;
  ASSERT_EQ(access("/usr/bin/promtool", X_OK), 0)
      << "promtool (Debian's prometheus package, installed by scripts/test.sh) is needed";
  const ProgramRun check =
      RunProgram({"/bin/sh", "-c", absl::StrCat("/usr/bin/promtool check metrics < ", file)});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  unlink(file.c_str());
}

TEST(MetricsTest, AMetricsAddressInUseStopsTheDaemonFromStarting) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> first =
      DaemonProcess::Start({"--metrics_listen=127.0.0.1:0"});
  ASSERT_OK(first.status());
  const std::string taken = (*first)->metrics_address();
  ASSERT_FALSE(taken.empty());
  const ProgramRun second = RunProgram(
      {BinaryPath("sluiced"), "--listen=127.0.0.1:0", "--metrics_listen=" + taken}, absl::Seconds(30));
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_THAT(second.err, HasSubstr("cannot serve metrics on " + taken));
}

TEST(MetricsTest, ADrainIsCountedAndShownWhileTheDaemonLives) {
  absl::StatusOr<std::shared_ptr<Device>> device =
      CreateDevice("cpu", DeviceOptions{.cpu_memory_limit = 64 << 20, .cpu_threads = 1});
  ASSERT_OK(device.status());
  DaemonOptions options;
  options.listen = "127.0.0.1:0";
  options.metrics_listen = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(*device, options);
  ASSERT_OK(daemon.status());
  EXPECT_EQ(Scrape((*daemon)->metrics_address())["sluice_drains_total"], 0);
  (*daemon)->Shutdown(absl::ZeroDuration());
  std::map<std::string, double> drained = Scrape((*daemon)->metrics_address());
  EXPECT_EQ(drained["sluice_drains_total"], 1);
  EXPECT_EQ(drained["sluice_draining"], 1);
}

ProgramRun Health(const std::string& address, const std::string& service = "") {
  return RunProgram({BinaryPath("sluice"), "health", "--server=" + address,
                     "--service=" + service},
                    absl::Seconds(30));
}

TEST(HealthTest, TheHealthPortAndTheMainPortSayServingUntilTheDaemonDrains) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon =
      DaemonProcess::Start({"--health_listen=127.0.0.1:0", "--drain_timeout=60s"});
  ASSERT_OK(daemon.status());
  const std::string health = HealthAddress(**daemon);
  ASSERT_FALSE(health.empty()) << (*daemon)->process().Stderr();
  for (const std::string& address : {health, (*daemon)->address()}) {
    ProgramRun run = Health(address);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.out, "SERVING\n");
    run = Health(address, "sluice.v1.Sluice");
    EXPECT_EQ(run.exit_code, 0) << run.err;
    run = Health(address, "no.such.Service");
    EXPECT_EQ(run.exit_code, 1);
    EXPECT_THAT(run.err, HasSubstr("NOT_FOUND"));
  }
  // The health port serves nothing else: the Sluice service there is UNIMPLEMENTED.
  EXPECT_THAT(GetServerInfo(health, absl::Seconds(10)).status(),
              StatusIs(Code::kUnimplemented));
  // A session keeps the drain going; meanwhile both ports say NOT_SERVING.
  auto raw = std::make_unique<RawSession>((*daemon)->address());
  ASSERT_OK(raw->Open().status());
  ASSERT_EQ(kill((*daemon)->process().pid(), SIGTERM), 0);
  ProgramRun draining;
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] {
    draining = Health(health);
    return draining.exit_code == 1;
  }));
  EXPECT_EQ(draining.out, "NOT SERVING\n");
  EXPECT_THAT(draining.err, HasSubstr("NOT_SERVING"));
  EXPECT_EQ(Health((*daemon)->address()).exit_code, 1);
  raw.reset();  // the last session ends: the drain finishes
  absl::StatusOr<int> exit = (*daemon)->process().Wait(absl::Seconds(30));
  ASSERT_OK(exit.status());
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0);
  EXPECT_EQ(Health(health).exit_code, 1) << "nothing answers once it has exited";
}

constexpr char kToken[] = "operations-test-token-0123456789abcdef";

TEST(LogTest, JsonLinesAreObjectsNamingSessionPeerClientAndTenantButNeverTheToken) {
  const std::string tenants = NewPath("tenants.toml");
  std::ofstream(tenants) << "[tenants.team-a]\ntokens = [\""
                         << FormatTokenDigest(DigestToken(kToken)) << "\"]\n";
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon =
      DaemonProcess::Start({"--log_format=json", "--tenants_file=" + tenants});
  ASSERT_OK(daemon.status());
  const ProgramRun solve =
      RunProgram({BinaryPath("sluice"), "solve", kExample, "--server=" + (*daemon)->address(),
                  std::string("--token=") + kToken});
  ASSERT_EQ(solve.exit_code, 0) << solve.err;
  absl::StatusOr<int> exit = (*daemon)->process().SignalAndWait(SIGTERM, absl::Seconds(30));
  ASSERT_OK(exit.status());
  EXPECT_TRUE(WIFEXITED(*exit) && WEXITSTATUS(*exit) == 0);

  const std::string log = (*daemon)->process().Stderr();
  EXPECT_THAT(log, Not(HasSubstr(kToken)));
  int lines = 0, opened = 0, closed = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    ++lines;
    const nlohmann::json event = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(event.is_object()) << line;
    for (const char* key : {"time", "level", "program", "message"}) {
      EXPECT_TRUE(event.contains(key) && event[key].is_string()) << key << " in " << line;
    }
    EXPECT_EQ(event.value("program", ""), "sluiced");
    EXPECT_THAT(event.value("level", ""), ::testing::AnyOf("info", "warning", "error"));
    const std::string message = event.value("message", "");
    if (absl::StrContains(message, " opened by ") || absl::StrContains(message, " closed (")) {
      (absl::StrContains(message, " opened by ") ? opened : closed) += 1;
      EXPECT_FALSE(event.value("session", "").empty()) << line;
      EXPECT_THAT(event.value("peer", ""), HasSubstr("127.0.0.1")) << line;
      EXPECT_EQ(event.value("client", ""), "sluice solve") << line;
      EXPECT_EQ(event.value("tenant", ""), "team-a") << line;
    }
  }
  EXPECT_GE(lines, 4);  // serving, opened, closed, drained
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(closed, 1);
  unlink(tenants.c_str());
}

TEST(BalancedTargetTest, SchemesThatMayNameSeveralDaemonsAreBalanced) {
  EXPECT_TRUE(NamesSeveralDaemons("ipv4:127.0.0.1:7450,127.0.0.1:7451"));
  EXPECT_TRUE(NamesSeveralDaemons("ipv6:[::1]:7450,[::1]:7451"));
  EXPECT_TRUE(NamesSeveralDaemons("dns:///sluice.ns.svc:7450"));
  EXPECT_FALSE(NamesSeveralDaemons("127.0.0.1:7450"));
  EXPECT_FALSE(NamesSeveralDaemons("gpu-host:7450"));
  EXPECT_EQ(PinnedServerName("dns:///sluice.ns.svc:7450", {}), "sluice.ns.svc");
  EXPECT_EQ(PinnedServerName("dns://8.8.8.8/sluice.example:7450", {}), "sluice.example");
  EXPECT_EQ(PinnedServerName("dns:[::1]:7450", {}), "::1");
  EXPECT_EQ(PinnedServerName("ipv4:10.0.0.1:7450,10.0.0.2:7450", {}), "");
  EXPECT_EQ(PinnedServerName("dns:///a:1", {.tls_server_name = "b"}), "b");
}

uint32_t ActiveSessions(const std::string& address) {
  absl::StatusOr<v1::GetInfoResponse> info = GetServerInfo(address, absl::Seconds(10));
  EXPECT_OK(info.status());
  return info.ok() ? info->active_sessions() : 0;
}

TEST(BalancedTargetTest, SessionsSpreadOverTwoDaemonsAndLosingOneFailsOnlyItsSessions) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> a = DaemonProcess::Start();
  absl::StatusOr<std::unique_ptr<DaemonProcess>> b = DaemonProcess::Start();
  ASSERT_OK(a.status());
  ASSERT_OK(b.status());
  const std::string target = absl::StrCat("ipv4:", (*a)->address(), ",", (*b)->address());

  constexpr int kSessions = 8;
  std::vector<std::unique_ptr<RemoteDispatch>> sessions;
  for (int i = 0; i < kSessions; ++i) {
    absl::StatusOr<std::unique_ptr<RemoteDispatch>> session =
        RemoteDispatch::Connect({.target = target, .client_name = "balanced"});
    ASSERT_OK(session.status());
    sessions.push_back(*std::move(session));
  }
  const uint32_t on_a = ActiveSessions((*a)->address());
  const uint32_t on_b = ActiveSessions((*b)->address());
  EXPECT_EQ(on_a + on_b, kSessions);
  // round_robin turns among the daemons that are up: each gets its share (the first sessions
  // may all go to the daemon whose connection was ready first).
  EXPECT_GE(on_a, 2u);
  EXPECT_GE(on_b, 2u);

  // Daemon b dies: its sessions fail, those on a go on.
  ASSERT_OK((*b)->process().SignalAndWait(SIGKILL, absl::Seconds(10)).status());
  int failed = 0;
  for (std::unique_ptr<RemoteDispatch>& session : sessions) {
    absl::StatusOr<Resource> buffer = session->Allocate(4096);
    if (buffer.ok()) {
      EXPECT_OK(session->Free(*buffer));
    } else {
      EXPECT_THAT(buffer.status(), StatusIs(Code::kUnavailable));
      ++failed;
    }
  }
  EXPECT_EQ(failed, static_cast<int>(on_b));
  sessions.clear();

  // A solve retried on the same target lands on the daemon that is left (at most a few tries:
  // the first may still be sent to b before its channel has seen it go).
  const std::string expected = ExpectedAnswer();
  ProgramRun solve;
  for (int attempt = 0; attempt < 3; ++attempt) {
    solve = RunProgram({BinaryPath("sluice"), "solve", kExample, "--server=" + target});
    if (solve.exit_code == 0) break;
  }
  EXPECT_EQ(solve.exit_code, 0) << solve.err;
  EXPECT_EQ(solve.out, expected);
}

}  // namespace
}  // namespace sluice::testing
