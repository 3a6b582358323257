// The daemon as a process its supervisor runs for months: signals, a log whose reader went
// away, memory given back after a load. Starts the real sluiced; every wait is bounded.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/log.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/client/server_info.h"
#include "sluice/proto/contract.h"
#include "sluice/server/grpc/session_reactor.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/raw_session.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace sluice::testing {
namespace {

// The resident set of process `pid`, in bytes (0 if /proc cannot tell).
uint64_t ResidentBytesOf(pid_t pid) {
  std::FILE* statm = std::fopen(absl::StrFormat("/proc/%d/statm", pid).c_str(), "r");
  if (statm == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int read = std::fscanf(statm, "%llu %llu", &size, &resident);
  std::fclose(statm);
  return read == 2 ? resident * 4096ull : 0;
}

std::unique_ptr<RemoteDispatch> Connect(const std::string& address) {
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> d =
      RemoteDispatch::Connect({.target = address, .client_name = "lifecycle"});
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? std::move(*d) : nullptr;
}

TEST(DaemonLifecycleTest, AUnixSocketServesSessionsIsTheDaemonsAloneAndGoesWithIt) {
  char dir_template[] = "/tmp/sluice-unix-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string path = dir + "/sluiced.sock";
  const std::string address = "unix://" + path;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--listen=" + address}));
  EXPECT_EQ(daemon->address(), address);
  struct stat st;
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u) << "the daemon's user and group may connect, no one else";

  // A session over it, and GetInfo.
  const auto round_trip = [&address] {
    std::unique_ptr<RemoteDispatch> d = Connect(address);
    if (d == nullptr) return false;
    const std::vector<uint8_t> bytes = {1, 2, 3, 4, 5, 6, 7, 8};
    absl::StatusOr<Resource> r = d->Allocate(bytes.size());
    if (!r.ok() || !d->Upload(*r, bytes).ok()) return false;
    absl::StatusOr<std::vector<uint8_t>> back = d->Download(*r);
    return back.ok() && *back == bytes;
  };
  EXPECT_TRUE(round_trip());
  ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse info, GetServerInfo(address, absl::Seconds(30)));
  EXPECT_EQ(info.devices_size(), 1);

  // A second daemon may not take the path from a live one, nor a path that is not a socket.
  ProgramRun second = RunProgram({BinaryPath("sluiced"), "--backend=cpu", "--listen=" + address});
  EXPECT_NE(second.exit_code, 0);
  EXPECT_THAT(second.err, ::testing::HasSubstr("another process listens on it"));
  EXPECT_TRUE(round_trip()) << "the first daemon serves on";
  const std::string file = dir + "/a-file";
  std::ofstream(file) << "keep me";
  ProgramRun not_socket = RunProgram({BinaryPath("sluiced"), "--backend=cpu",
                                      "--listen=unix://" + file});
  EXPECT_NE(not_socket.exit_code, 0);
  EXPECT_THAT(not_socket.err, ::testing::HasSubstr("exists and is not a socket"));
  std::ifstream kept(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "keep me");
  ProgramRun too_long = RunProgram({BinaryPath("sluiced"), "--backend=cpu",
                                    "--listen=unix://" + dir + "/" + std::string(120, 's')});
  EXPECT_NE(too_long.exit_code, 0);
  EXPECT_THAT(too_long.err, ::testing::HasSubstr("must have 1 to 107 bytes"));

  // A daemon that dies leaves its socket; the next one replaces it. One that drains removes it.
  ASSERT_OK(daemon->process().SignalAndWait(SIGKILL, absl::Seconds(30)).status());
  ASSERT_EQ(lstat(path.c_str(), &st), 0) << "a killed daemon cannot clean up";
  ASSERT_OK_AND_ASSIGN(daemon, DaemonProcess::Start({"--backend=cpu", "--listen=" + address}));
  EXPECT_TRUE(round_trip());
  ASSERT_OK_AND_ASSIGN(int status, daemon->process().SignalAndWait(SIGTERM, absl::Seconds(30)));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(lstat(path.c_str(), &st), 0) << "the socket went with its daemon";
  unlink(file.c_str());
  rmdir(dir.c_str());
}

// A setting GetInfo would publish but the daemon could not keep is refused at the start (exit
// 2, naming the flag): a default chunk below what a session may negotiate (a session asking
// for none would get 4K, not it), or no room for a stream waiting to open (the newest always
// waits).
TEST(DaemonLifecycleTest, SettingsTheDaemonCouldNotKeepAreRefusedAtTheStart) {
  for (const auto& [flag, says] : std::vector<std::pair<std::string, std::string>>{
           {"--chunk_size=1K", "--chunk_size must be at least 4K"},
           {"--max_chunk_size=2K", "--max_chunk_size must lie in [4K, 64M]"},
           {"--max_unopened_streams=0", "--max_unopened_streams must be at least 1"}}) {
    const ProgramRun run = RunProgram(
        {BinaryPath("sluiced"), "--backend=cpu", "--cpu_memory=64M", "--listen=127.0.0.1:0", flag},
        absl::Seconds(60));
    EXPECT_EQ(run.exit_code, 2) << flag << ": " << run.err;
    EXPECT_THAT(run.err, ::testing::HasSubstr(says)) << flag;
  }
}

TEST(DaemonLifecycleTest, SignalsThatDoNotAskForAStopAreLoggedAndTheDaemonServesOn) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G"}));
  auto d = Connect(daemon->address());
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(4096));
  const pid_t pid = daemon->process().pid();
  ASSERT_EQ(::kill(pid, SIGHUP), 0);
  ASSERT_EQ(::kill(pid, SIGUSR1), 0);
  ASSERT_EQ(::kill(pid, SIGPIPE), 0);
  // Signals whose default would end a process are logged and ignored.
  for (const int s : {SIGUSR2, SIGALRM, SIGVTALRM, SIGIO, SIGPWR, SIGXFSZ, SIGRTMIN + 3}) {
    ASSERT_EQ(::kill(pid, s), 0) << s;
  }
  EXPECT_TRUE(WaitUntil(absl::Seconds(20), [&] {
    const std::string log = daemon->process().Stderr();
    return absl::StrContains(log, "received SIGHUP") &&
           absl::StrContains(log, "status: 1 sessions open") &&
           absl::StrContains(log, "received SIGUSR2: ignored") &&
           absl::StrContains(log, "received SIGALRM: ignored") &&
           absl::StrContains(log, "received SIGRTMIN+3: ignored");
  })) << daemon->process().Stderr();
  // The session lives on, its buffer with it.
  EXPECT_OK(d->Ping());
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> bytes, d->DownloadRange(r, 0, 4));
  EXPECT_EQ(bytes, std::vector<uint8_t>(4, 0));
  d.reset();
  // SIGQUIT drains, as SIGTERM does.
  ASSERT_OK_AND_ASSIGN(int status, daemon->process().SignalAndWait(SIGQUIT, absl::Seconds(30)));
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_THAT(daemon->process().Stderr(), ::testing::HasSubstr("received SIGQUIT: draining"));
}

TEST(DaemonLifecycleTest, ALogWhoseReaderWentAwayNeverStopsTheDaemon) {
  // Every line the daemon logs fails with EPIPE (it would die of SIGPIPE, were it not ignored).
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DaemonProcess> daemon,
      DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G"}, ChildStderr::kClosedPipe));
  for (int session = 0; session < 3; ++session) {  // each opens and closes with a log line
    auto d = Connect(daemon->address());
    ASSERT_NE(d, nullptr);
    ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(64));
    ASSERT_OK(d->Upload(r, std::vector<uint8_t>(64, 9)));
    ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> back, d->Download(r));
    EXPECT_EQ(back, std::vector<uint8_t>(64, 9));
  }
  ASSERT_OK_AND_ASSIGN(int status, daemon->process().SignalAndWait(SIGTERM, absl::Seconds(30)));
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(DaemonLifecycleTest, AfterALoadTheDaemonGivesItsMemoryBack) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=2G"}));
  const pid_t pid = daemon->process().pid();
  {
    // Settle: one small session first, so the baseline has what any served daemon has.
    auto d = Connect(daemon->address());
    ASSERT_NE(d, nullptr);
    ASSERT_OK(d->Ping());
  }
  ASSERT_TRUE(WaitUntil(absl::Seconds(20), [&] {
    absl::StatusOr<v1::GetInfoResponse> info = GetServerInfo(daemon->address(), absl::Seconds(5));
    return info.ok() && info->active_sessions() == 0;
  }));
  const uint64_t before = ResidentBytesOf(pid);
  ASSERT_GT(before, 0u);
  // The load: four sessions at once, each moving 96 MiB up and back through a buffer.
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      auto d = Connect(daemon->address());
      ASSERT_NE(d, nullptr);
      const std::vector<uint8_t> bytes(size_t{96} << 20, static_cast<uint8_t>(c));
      ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(bytes.size()));
      ASSERT_OK(d->Upload(r, bytes));
      ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> back, d->Download(r));
      EXPECT_EQ(back, bytes);
    });
  }
  for (std::thread& t : clients) t.join();
  const uint64_t loaded = ResidentBytesOf(pid);
  // Once the last session has closed, the memory goes back: within 2x of where it started.
  const bool returned = WaitUntil(absl::Seconds(30), [&] { return ResidentBytesOf(pid) <= 2 * before; });
  EXPECT_TRUE(returned) << "resident before the load " << before << " bytes, during it "
                        << loaded << ", after it " << ResidentBytesOf(pid);
  std::printf("resident bytes: before the load %llu, at its end %llu, after it %llu\n",
              static_cast<unsigned long long>(before), static_cast<unsigned long long>(loaded),
              static_cast<unsigned long long>(ResidentBytesOf(pid)));
}

TEST(DaemonLifecycleTest, ADrainingDaemonRefusesNewSessionsAtOnceAndTellsOpenOnes) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--drain_timeout=60s"}));
  auto holder = Connect(daemon->address());
  ASSERT_NE(holder, nullptr);
  ASSERT_OK(holder->Allocate(64).status());
  const absl::Time signalled = absl::Now();
  ASSERT_EQ(::kill(daemon->process().pid(), SIGTERM), 0);
  // The open session hears of the drain on its stream, with the deadline.
  ASSERT_TRUE(WaitUntil(absl::Seconds(20), [&] { return holder->draining_until().has_value(); }));
  EXPECT_GE(*holder->draining_until(), signalled + absl::Seconds(55));
  EXPECT_OK(holder->Ping()) << "an open session works on until the deadline";
  // A new client is refused at once, told why, not left to wait for its connect timeout.
  const absl::Time asked = absl::Now();
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> late = RemoteDispatch::Connect(
      {.target = daemon->address(), .client_name = "late", .connect_timeout = absl::Seconds(30)});
  EXPECT_THAT(late, StatusIs(absl::StatusCode::kUnavailable, ::testing::HasSubstr("draining")));
  EXPECT_LT(absl::Now() - asked, absl::Seconds(10));
  // Once the last session ends, the daemon goes, without waiting out its grace period.
  holder.reset();
  ASSERT_OK_AND_ASSIGN(int status, daemon->process().Wait(absl::Seconds(30)));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_LT(absl::Now() - signalled, absl::Seconds(40));
}

TEST(DaemonLifecycleTest, AClientThatCannotReachTheDaemonSaysWhyWithinItsTimeout) {
  // Nothing listens on port 1 of the loopback address.
  const absl::Time asked = absl::Now();
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> d = RemoteDispatch::Connect(
      {.target = "127.0.0.1:1", .client_name = "lost", .connect_timeout = absl::Seconds(20)});
  EXPECT_THAT(d, StatusIs(absl::StatusCode::kUnavailable, ::testing::HasSubstr("127.0.0.1:1")));
  EXPECT_THAT(std::string(d.status().message()), ::testing::ContainsRegex("[Cc]onnect|refused"));
  EXPECT_LT(absl::Now() - asked, absl::Seconds(20));
}

TEST(DaemonLifecycleTest, AFloodOfBadMessagesLogsAFewLinesWithTimeAndClient) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G"}));
  // Each stream opens with a client name that is not UTF-8: libprotobuf refuses the message
  // (and logs why), and the daemon ends the stream.
  constexpr int kStreams = 60;
  for (int i = 0; i < kStreams; ++i) {
    RawSession raw(daemon->address());
    v1::SessionRequest open;
    open.set_id(1);
    open.mutable_open()->set_client_name("\xff\xfe not utf-8");
    raw.Send(open);
    EXPECT_EQ(raw.Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  // Still serving.
  auto d = Connect(daemon->address());
  ASSERT_NE(d, nullptr);
  EXPECT_OK(d->Ping());
  const std::string log = daemon->process().Stderr();
  int protobuf_lines = 0;
  for (const absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StrContains(line, "libprotobuf ERROR")) continue;
    ++protobuf_lines;
    // In the daemon's format: its time, its tag, the client.
    EXPECT_TRUE(absl::StartsWith(line, "20")) << line;
    EXPECT_THAT(line, ::testing::HasSubstr("sluiced: [ipv4:127.0.0.1:")) << line;
  }
  EXPECT_GE(protobuf_lines, 1);
  EXPECT_LE(protobuf_lines, kLogBurst + 2) << "the flood is limited";
}

// A client is limited in what it makes the daemon log, whatever names it gives its sessions:
// 60 sessions of one client, each with a name of its own, log a burst of open and close lines
// and then a few a second, not two lines each.
TEST(DaemonLifecycleTest, AClientThatRenamesItsSessionsLogsNoMoreForIt) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G"}));
  constexpr int kSessions = 60;
  const absl::Time start = absl::Now();
  for (int i = 0; i < kSessions; ++i) {
    RawSession raw(daemon->address());
    v1::SessionRequest open;
    open.mutable_open()->set_client_name(absl::StrCat("name ", i));
    ASSERT_OK(raw.Call(open, 1));
  }
  auto d = Connect(daemon->address());
  ASSERT_NE(d, nullptr);
  EXPECT_OK(d->Ping());
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  int lines = 0;
  for (const absl::string_view line : absl::StrSplit(daemon->process().Stderr(), '\n')) {
    if (absl::StrContains(line, "opened by \"name ") || absl::StrContains(line, " closed (")) {
      ++lines;
    }
  }
  EXPECT_GE(lines, 1);
  EXPECT_LE(lines, kLogBurst + kLogPerSecond * (seconds + 1))
      << "over " << seconds << " s, for " << 2 * kSessions << " opens and closes";
}

// GetInfo of `daemon`, polled until `done` holds (at most 20 s).
template <class Done>
bool WaitForInfo(DaemonProcess& daemon, Done done) {
  return WaitUntil(absl::Seconds(20), [&] {
    absl::StatusOr<v1::GetInfoResponse> info = GetServerInfo(daemon.address(), absl::Seconds(5));
    return info.ok() && done(*info);
  });
}

// Without tenants a client is its peer: the host and the user behind the connection. The name
// it gives is a label, so no process takes more than one share by renaming itself.
TEST(DaemonLifecycleTest, OneClientTakesNoMoreThanItsShareWhateverNamesItGives) {
  const testing::ScopedTempDir scratch("sluice-share");  // the daemon's socket is left in it
  const std::string& dir = scratch.path();
  for (const std::string& listen :
       {std::string("127.0.0.1:0"), "unix://" + dir + "/sluiced.sock"}) {
    SCOPED_TRACE(listen);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                         DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                               "--listen=" + listen, "--max_sessions=8",
                                               "--session_memory=48M", "--client_memory=64M"}));
    ASSERT_TRUE(WaitForInfo(*daemon, [](const v1::GetInfoResponse& i) {
      return i.max_sessions_per_client() == 2 && i.client_memory() == (64u << 20) &&
             i.default_limits().memory_quota() == (48u << 20);
    })) << "GetInfo shows the client's share";
    const auto open = [&](const std::string& name) {
      return RemoteDispatch::Connect({.target = daemon->address(), .client_name = name});
    };
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> first, open("greedy"));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> second, open("greedy-2"));
    for (const char* name : {"greedy", "modest", ""}) {
      EXPECT_THAT(open(name), StatusIs(absl::StatusCode::kResourceExhausted,
                                       ::testing::HasSubstr("--max_sessions_per_client")))
          << "a third session named \"" << name << "\" is the same client's";
    }

    // 48M in one session, and then only 16M more in the other: 64M for the client.
    ASSERT_OK(first->Allocate(48 << 20).status());
    EXPECT_THAT(second->Allocate(32 << 20),
                StatusIs(absl::StatusCode::kResourceExhausted,
                         ::testing::HasSubstr("the client's memory quota")));
    ASSERT_OK(second->Allocate(16 << 20).status());

    first.reset();  // its session's slot and memory are the client's again
    ASSERT_TRUE(WaitForInfo(*daemon, [](const v1::GetInfoResponse& i) {
      return i.active_sessions() == 1;
    }));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> third, open("modest"));
    ASSERT_OK(third->Allocate(48 << 20).status());
    // The kernel named the user behind each connection: the log says which client it was.
    EXPECT_THAT(daemon->process().Stderr(),
                ::testing::HasSubstr(absl::StrFormat(
                    "(client %s uid %d)",
                    absl::StartsWith(listen, "unix:") ? "unix" : "ipv4:127.0.0.1", getuid())));
  }
}

TEST(DaemonLifecycleTest, AStreamThatNeverOpensIsEndedWhenTheOpenTimeoutPasses) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--open_timeout=1s"}));
  RawSession lingering(daemon->address());
  ASSERT_OK(lingering.Ping());  // the stream exists once the daemon answered on it
  const grpc::Status ended = lingering.AwaitEnd();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(ended.error_message(), ::testing::HasSubstr("--open_timeout"));
  EXPECT_TRUE(WaitForInfo(*daemon, [](const v1::GetInfoResponse& i) {
    return i.unopened_streams() == 0;
  }));
}

TEST(DaemonLifecycleTest, AStreamBeforeItsOpenSendsAFewSmallMessagesAndSmallPings) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G"}));
  RawSession early(daemon->address());
  v1::SessionRequest ping;
  ping.mutable_ping()->set_payload(std::string(kMaxUnopenedPingPayload, 'p'));
  v1::SessionResponse pong;
  ASSERT_OK(early.Call(ping, early.NextId(), &pong));
  EXPECT_EQ(pong.ping().payload().size(), kMaxUnopenedPingPayload);
  ping.mutable_ping()->set_payload(std::string(kMaxUnopenedPingPayload + 1, 'p'));
  EXPECT_THAT(early.Call(ping, early.NextId()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("before its session is open")));
  // Once open, a ping carries up to kMaxPingPayload.
  ASSERT_OK(early.Open().status());
  ping.mutable_ping()->set_payload(std::string(kMaxPingPayload, 'p'));
  ASSERT_OK(early.Call(ping, early.NextId(), &pong));
  EXPECT_EQ(pong.ping().payload().size(), kMaxPingPayload);

  // Past kMaxUnopenedMessages messages without an open, the stream is ended.
  RawSession chatty(daemon->address());
  ping.mutable_ping()->set_payload("hello");
  for (uint32_t i = 0; i < kMaxUnopenedMessages; ++i) {
    ASSERT_OK(chatty.Call(ping, chatty.NextId())) << i;
  }
  ASSERT_TRUE(chatty.Send(ping));
  grpc::Status ended = chatty.AwaitEnd();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(ended.error_message(), ::testing::HasSubstr("open it first"));

  // And a message larger than kMaxUnopenedMessageBytes ends it at once.
  RawSession large(daemon->address());
  ping.mutable_ping()->set_payload(std::string(kMaxUnopenedMessageBytes, 'p'));
  ASSERT_TRUE(large.Send(ping));
  ended = large.AwaitEnd();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(ended.error_message(), ::testing::HasSubstr("before the stream's session is open"));
  EXPECT_TRUE(WaitForInfo(*daemon, [](const v1::GetInfoResponse& i) {
    return i.unopened_streams() == 0 && i.transfer_bytes_in_use() == 0;
  }));
}

TEST(DaemonLifecycleTest, WhatTheDaemonMayHoldOfTheHostIsPublishedAndMustFitIt) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--max_transfer_bytes=256M", "--grpc_memory=300M",
                                             "--max_unopened_streams=8", "--max_sessions=16"}));
  ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse info, GetServerInfo(daemon->address(),
                                                               absl::Seconds(20)));
  EXPECT_EQ(info.max_unopened_messages(), kMaxUnopenedMessages);
  EXPECT_EQ(info.max_unopened_message_bytes(), kMaxUnopenedMessageBytes);
  EXPECT_EQ(info.max_unopened_ping_payload(), kMaxUnopenedPingPayload);
  const v1::HostMemory& m = info.host_memory();
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  EXPECT_EQ(m.transfers(), 256 * kMiB + 32 * kMiB) << "the budget and an eighth";
  EXPECT_EQ(m.grpc(), 300 * kMiB);
  EXPECT_EQ(m.unopened_streams(), 8 * StreamBounds::kUnopenedStreamBytes);
  EXPECT_EQ(m.past_shares(), 16 * StreamBounds::kPastShareBytes);
  EXPECT_EQ(m.device_buffers(), 1024 * kMiB) << "the CPU device's buffers are host memory";
  EXPECT_EQ(m.device_staging(), 0u) << "the CPU device stages nothing";
  EXPECT_EQ(m.upload_blocks(), 256 * kMiB / 8) << "an eighth of the budget, kept warm";
  EXPECT_EQ(m.total(), m.transfers() + m.grpc() + m.unopened_streams() + m.past_shares() +
                           m.device_buffers() + m.device_staging() + m.upload_blocks());
  EXPECT_GT(m.host(), 0u);
  EXPECT_LE(m.total(), m.host());

  // More than the host has: refused at start, naming the parts.
  const ProgramRun refused = RunProgram(
      {BinaryPath("sluiced"), "--backend=cpu", "--cpu_memory=1G", "--listen=127.0.0.1:0",
       absl::StrFormat("--max_transfer_bytes=%dM", 2 * m.host() / kMiB)},
      absl::Seconds(30));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.err, ::testing::HasSubstr("of this host's"));
  EXPECT_THAT(refused.err, ::testing::HasSubstr("--max_transfer_bytes and an eighth"));
}

TEST(DaemonLifecycleTest, TheOldestUnopenedStreamMakesRoomForANewOne) {
  // An open timeout no run reaches: eviction alone ends the streams here, however loaded the
  // machine (at 5 s, a loaded run once saw the first stream time out before the third came).
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--open_timeout=1h", "--max_unopened_streams=2"}));
  // A stream exists once the daemon answered on it: the first is there before the second is
  // made (two new streams may reach the daemon in either order).
  RawSession first(daemon->address());
  ASSERT_OK(first.Ping());
  RawSession second(daemon->address());
  ASSERT_OK(second.Ping());
  ASSERT_TRUE(WaitForInfo(*daemon, [](const v1::GetInfoResponse& i) {
    return i.unopened_streams() == 2 && i.max_unopened_streams() == 2;
  }));
  // A third stream makes room for itself: the one that waited longest is ended, saying why,
  // and a client that opens at once is never turned away by streams that linger.
  RawSession third(daemon->address());
  const grpc::Status evicted = first.AwaitEnd();
  EXPECT_EQ(evicted.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(evicted.error_message(), ::testing::HasSubstr("--max_unopened_streams"));
  RawSession opener(daemon->address());  // ends the second, then opens
  ASSERT_OK(opener.Open().status());
  EXPECT_EQ(second.AwaitEnd().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // The third still waits, alone: the bound counts streams that have not opened.
  EXPECT_TRUE(WaitForInfo(*daemon, [](const v1::GetInfoResponse& i) {
    return i.unopened_streams() == 1;
  }));
}

TEST(DaemonLifecycleTest, AnIdleSessionIsEndedAndItsBuffersFreed) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--idle_timeout=1s"}));
  auto d = Connect(daemon->address());
  ASSERT_NE(d, nullptr);
  ASSERT_OK(d->Allocate(1 << 20).status());
  ASSERT_TRUE(WaitForInfo(*daemon, [](const v1::GetInfoResponse& i) {
    return i.active_sessions() == 0 && i.devices(0).memory().used() == 0;
  }));
  EXPECT_THAT(d->Ping(), StatusIs(absl::StatusCode::kUnavailable, ::testing::HasSubstr("idle")));
}

TEST(DaemonLifecycleTest, AStalledUploadEndsItsSessionAndGivesBackWhatItHeld) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--stall_timeout=1s"}));
  RawSession raw(daemon->address());
  ASSERT_OK(raw.Open(1 << 20).status());
  ASSERT_OK_AND_ASSIGN(uint64_t h, raw.Allocate(8 << 20));
  // Half of an 8 MiB upload, then nothing.
  v1::SessionRequest first;
  first.set_id(raw.NextId());
  v1::Range& range = *first.mutable_upload()->add_ranges();
  range.set_handle(h);
  range.set_length(8 << 20);
  first.mutable_upload()->set_data(std::string(1 << 20, 'u'));
  ASSERT_TRUE(raw.Send(first));
  const grpc::Status ended = raw.AwaitEnd();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(ended.error_message(), ::testing::HasSubstr("upload stalled"));
  EXPECT_TRUE(WaitForInfo(*daemon, [](const v1::GetInfoResponse& i) {
    return i.active_sessions() == 0 && i.transfer_bytes_in_use() == 0 &&
           i.devices(0).memory().used() == 0;
  }));
}

TEST(DaemonLifecycleTest, AClientThatReadsNoRepliesIsEndedAndGivesBackWhatItHeld) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--stall_timeout=1s"}));
  RawSession raw(daemon->address());
  ASSERT_OK(raw.Open(1 << 20).status());
  ASSERT_OK_AND_ASSIGN(uint64_t h, raw.Allocate(64 << 20));
  // A 64 MiB read whose replies are never read.
  v1::SessionRequest read;
  read.set_id(raw.NextId());
  v1::Range& range = *read.mutable_read()->add_ranges();
  range.set_handle(h);
  range.set_length(64 << 20);
  ASSERT_TRUE(raw.Send(read));
  EXPECT_TRUE(WaitForInfo(*daemon, [](const v1::GetInfoResponse& i) {
    return i.active_sessions() == 0 && i.transfer_bytes_in_use() == 0 &&
           i.devices(0).memory().used() == 0;
  })) << daemon->process().Stderr();
  EXPECT_THAT(daemon->process().Stderr(), ::testing::HasSubstr("closed (ended by the daemon)"));
}

}  // namespace
}  // namespace sluice::testing
