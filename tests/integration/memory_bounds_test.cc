// What hostile streams can make the real sluiced hold, measured from outside: its resident
// memory (/proc) and what GetInfo counts, while streams that never open or never read flood
// it, beside a well-behaved client whose solve must run and be correct; and what it gives
// back once they are gone.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/token.h"
#include "sluice/client/server_info.h"
#include "sluice/engine/session.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/proto/contract.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/raw_session.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMiB = uint64_t{1} << 20;

// A line of /proc/PID/status ("VmRSS", "VmHWM"), in bytes; 0 when absent.
uint64_t ProcStatusBytes(pid_t pid, const std::string& key) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::vector<std::string> fields =
        absl::StrSplit(line.substr(key.size() + 1), ' ', absl::SkipWhitespace());
    uint64_t kib = 0;
    if (!fields.empty() && absl::SimpleAtoi(fields[0], &kib)) return kib << 10;
  }
  return 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Solves the taint example through `daemon` with the CLI and checks the answer.
void ExpectSolveThrough(const std::string& address, const std::string& token = "") {
  const std::string base = std::string(SLUICE_SOURCE_DIR) + "/examples/taint";
  std::vector<std::string> argv = {BinaryPath("sluice"), "solve", base + ".ifds",
                                   "--server=" + address};
  if (!token.empty()) argv.push_back("--token=" + token);
  const ProgramRun run = RunProgram(argv, absl::Seconds(120));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, ReadFile(base + ".expected.tsv"));
}

absl::StatusOr<v1::GetInfoResponse> InfoOf(const std::string& address,
                                           const std::string& token = "") {
  ClientCredentials credentials;
  credentials.token = token;
  return GetServerInfo(address, absl::Seconds(20), credentials);
}

// Waits (at most 30 s) until the daemon at `address` counts no transfer memory in use.
void ExpectNothingCounted(const std::string& address) {
  uint64_t in_use = 0;
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] {
    absl::StatusOr<v1::GetInfoResponse> info = InfoOf(address);
    in_use = info.ok() ? info->transfer_bytes_in_use() : ~uint64_t{0};
    return in_use == 0;
  })) << in_use << " bytes still counted";
}

// Streams that send `message` over and over, each from its own thread, until the daemon
// stops reading them (their writes block) or ends them; Stop cancels what still runs.
class Flood {
 public:
  Flood(const std::string& address, int streams, const std::string& token, bool open,
        v1::SessionRequest message, int most)
      : sessions_(streams) {
    for (int i = 0; i < streams; ++i) {
      sessions_[i] = std::make_unique<RawSession>(address, token);
    }
    for (int i = 0; i < streams; ++i) {
      threads_.emplace_back([this, i, open, message, most]() mutable {
        RawSession& raw = *sessions_[i];
        if (open && !raw.Open().ok()) return;
        for (int n = 0; n < most; ++n) {
          message.set_id(raw.NextId());
          if (!raw.Send(message)) return;  // ended, or cancelled by Stop
        }
      });
    }
  }
  ~Flood() { Stop(); }

  void Stop() {
    for (std::unique_ptr<RawSession>& raw : sessions_) raw->Cancel();
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
    sessions_.clear();
  }

 private:
  std::vector<std::unique_ptr<RawSession>> sessions_;
  std::vector<std::thread> threads_;
};

v1::SessionRequest Ping(size_t payload) {
  v1::SessionRequest ping;
  ping.mutable_ping()->set_payload(std::string(payload, 'p'));
  return ping;
}

TEST(MemoryBoundsTest, StreamsThatNeverOpenHoldLittleAndWhatTheyHeldGoesBack) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--open_timeout=1h"}));
  const pid_t pid = daemon->process().pid();
  ExpectSolveThrough(daemon->address());  // the baseline includes a session's first run
  const uint64_t before = ProcStatusBytes(pid, "VmRSS");
  ASSERT_GT(before, 0u);
  {
    // 64 streams that never open, each sending up to 1 GiB of pings as large as a message
    // before an open may be: the daemon reads 16 of each and ends the stream.
    Flood flood(daemon->address(), 64, "", /*open=*/false,
                Ping(kMaxUnopenedMessageBytes - 64), /*most=*/16384);
    ExpectSolveThrough(daemon->address());
    flood.Stop();
  }
  const uint64_t peak = ProcStatusBytes(pid, "VmHWM");
  std::cerr << "[ measured ] RSS " << before / kMiB << " MiB before, peak " << peak / kMiB
            << " MiB\n";
  EXPECT_LE(peak, before + 64 * kMiB) << "RSS " << before << " -> peak " << peak;
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] {
    return ProcStatusBytes(pid, "VmRSS") <= before + 100 * kMiB;
  })) << "RSS after the flood: " << ProcStatusBytes(pid, "VmRSS");
  // Nothing stays counted once the sessions' ends are done (the last one's close may still be
  // on its way when the flood stops).
  ExpectNothingCounted(daemon->address());
}

// A request of many empty elements is 2 bytes an element on the wire and an object each
// parsed: about 6 MB that would hold hundreds of MB. It is sized before it is parsed and, past
// its client's share, refused unparsed, the session going on; an upload that begins so is
// answered once, its later chunks dropped; and before an open such a message ends the stream.
TEST(MemoryBoundsTest, ARequestThatWouldHoldMoreThanItsClientsShareParsedIsRefusedUnparsed) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--max_request_bytes=16M",
                                             "--client_transfer_bytes=32M"}));
  const pid_t pid = daemon->process().pid();
  RawSession session(daemon->address());
  ASSERT_OK(session.Open().status());
  ASSERT_OK(session.Ping());
  const uint64_t before = ProcStatusBytes(pid, "VmHWM");
  ASSERT_GT(before, 0u);
  constexpr int kElements = 3 << 20;
  v1::SessionRequest steps;
  for (int i = 0; i < kElements; ++i) steps.mutable_execute()->add_prefix();
  ASSERT_LT(steps.ByteSizeLong(), 7 * kMiB);
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(session.Call(steps, session.NextId()),
                StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("refused unparsed")));
  }
  v1::SessionRequest ranges;
  for (int i = 0; i < kElements; ++i) ranges.mutable_upload()->add_ranges();
  const uint64_t upload_id = session.NextId();
  ranges.set_id(upload_id);
  ASSERT_TRUE(session.Send(ranges));
  v1::SessionRequest chunk;
  chunk.set_id(upload_id);
  chunk.mutable_upload()->set_data("later data");
  chunk.mutable_upload()->set_last(true);
  ASSERT_TRUE(session.Send(chunk));
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse refused, session.Await(upload_id));
  EXPECT_EQ(refused.status().code(), static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(refused.status().message(), HasSubstr("refused unparsed"));
  // The next reply is the ping's: the upload's chunk was dropped, not answered.
  const uint64_t ping_id = session.NextId();
  v1::SessionRequest ping = Ping(8);
  ping.set_id(ping_id);
  ASSERT_TRUE(session.Send(ping));
  v1::SessionResponse next;
  ASSERT_TRUE(session.Next(&next));
  EXPECT_EQ(next.id(), ping_id);
  EXPECT_EQ(next.status().code(), 0) << next.status().message();
  const uint64_t peak = ProcStatusBytes(pid, "VmHWM");
  std::cerr << "[ measured ] peak RSS " << before / kMiB << " MiB before, " << peak / kMiB
            << " MiB after four requests that would hold "
            << kElements * (steps.execute().prefix(0).SpaceUsedLong() + 8) / kMiB
            << " MiB each parsed\n";
  EXPECT_LE(peak, before + 64 * kMiB);

  // Before an open: a message within the size allowed, holding far more parsed.
  RawSession unopened(daemon->address());
  v1::SessionRequest small;
  for (int i = 0; i < 30000; ++i) small.mutable_execute()->add_prefix();
  ASSERT_LE(small.ByteSizeLong(), kMaxUnopenedMessageBytes);
  ASSERT_TRUE(unopened.Send(small));
  const grpc::Status ended = unopened.AwaitEnd();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(ended.error_message(), HasSubstr("once parsed"));
  ASSERT_OK(session.Ping());
}

// A message within its client's share is parsed, and what it holds once parsed is counted
// while its request is queued or running, then goes: it is not kept, uncounted, until its
// stream's next message (a stream may send none for as long as its idle timeout). Six sessions
// of one client each send an upload of two million empty ranges in one message (4 MB on the
// wire, 128 MiB parsed), refused for its ranges, and send nothing more: the daemon then holds
// a parse or two (what its allocator keeps), not six.
TEST(MemoryBoundsTest, AParsedMessageGoesOnceItsRequestIsDoneNotAtItsStreamsNext) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--max_request_bytes=16M",
                                             "--max_transfer_bytes=2G",
                                             "--client_transfer_bytes=1G"}));
  const pid_t pid = daemon->process().pid();
  constexpr int kSessions = 6;
  constexpr int kRanges = 2 << 20;
  v1::SessionRequest ranges;
  for (int i = 0; i < kRanges; ++i) ranges.mutable_upload()->add_ranges();
  ranges.mutable_upload()->set_last(true);  // the stream's last message until it is measured
  const uint64_t parsed = ranges.SpaceUsedLong();
  ASSERT_GT(parsed, 48 * kMiB);
  ASSERT_LT(ranges.ByteSizeLong(), 7 * kMiB);
  std::vector<std::unique_ptr<RawSession>> sessions;
  for (int s = 0; s < kSessions; ++s) {
    sessions.push_back(std::make_unique<RawSession>(daemon->address()));
    ASSERT_OK(sessions.back()->Open().status());
    ASSERT_OK(sessions.back()->Ping());
  }
  const uint64_t before = ProcStatusBytes(pid, "VmRSS");
  ASSERT_GT(before, 0u);
  for (const std::unique_ptr<RawSession>& session : sessions) {
    const uint64_t id = session->NextId();
    ranges.set_id(id);
    ASSERT_TRUE(session->Send(ranges));
    ASSERT_OK_AND_ASSIGN(v1::SessionResponse refused, session->Await(id));
    EXPECT_EQ(refused.status().code(), static_cast<int>(absl::StatusCode::kInvalidArgument))
        << refused.status().message();
    EXPECT_THAT(refused.status().message(), HasSubstr("ranges"));
  }
  // Nothing stays counted once the requests are done, and the memory the parses held is the
  // allocator's to use again: at most a couple of them at once.
  ExpectNothingCounted(daemon->address());
  uint64_t rss = 0;
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] {
    rss = ProcStatusBytes(pid, "VmRSS");
    return rss <= before + 4 * parsed;
  })) << "the parses are held after their requests: RSS " << rss;
  std::cerr << "[ measured ] " << kSessions << " sessions' uploads of " << kRanges
            << " empty ranges, " << parsed / kMiB << " MiB each parsed: RSS " << before / kMiB
            << " MiB before, " << rss / kMiB << " MiB after\n";
  for (const std::unique_ptr<RawSession>& session : sessions) ASSERT_OK(session->Ping());
}

TEST(MemoryBoundsTest, TwelveStreamsThatNeverReadHoldTheirClientsShareWithinWhatIsPublished) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--max_transfer_bytes=256M",
                                             "--max_request_bytes=64M", "--grpc_memory=512M"}));
  const pid_t pid = daemon->process().pid();
  ExpectSolveThrough(daemon->address());
  ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse info, InfoOf(daemon->address()));
  const v1::HostMemory& bound = info.host_memory();
  const uint64_t share = info.client_transfer_bytes();
  EXPECT_EQ(share, 128 * kMiB) << "half the budget by default";
  const uint64_t slack = 12 * 2 * kMaxPingPayload + 12 * 2 * 1024;
  const ScopedTempDir temp{"memory-bounds"};
  const std::string problem = temp.path() + "/problem.ifds";
  ASSERT_EQ(RunProgram({BinaryPath("sluice"), "gen", "--procedures=200", "--seed=5",
                        "--out=" + problem})
                .exit_code,
            0);
  const ProgramRun reference =
      RunProgram({BinaryPath("sluice"), "solve", problem, "--solver=reference"});
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  ASSERT_GT(reference.out.size(), size_t{64} << 10) << "its answer takes more than 64 KiB";
  // The CLI (`sluice`, and sluice-remote beside it, which runs its --server work) and the
  // problem where another user may run and read them.
  const std::string sluice = temp.path() + "/sluice";
  std::filesystem::copy_file(BinaryPath("sluice"), sluice);
  std::filesystem::copy_file(BinaryPath("sluice-remote"), temp.path() + "/sluice-remote");
  std::filesystem::permissions(temp.path(), std::filesystem::perms::owner_all |
                                                std::filesystem::perms::group_read |
                                                std::filesystem::perms::group_exec |
                                                std::filesystem::perms::others_read |
                                                std::filesystem::perms::others_exec);
  std::filesystem::permissions(problem, std::filesystem::perms::others_read,
                               std::filesystem::perm_options::add);
  const uint64_t before = ProcStatusBytes(pid, "VmRSS");
  {
    // 12 sessions of one client, each sending up to 2048 pings of just under 64 KiB (no
    // reservation: flow control alone bounds them) and reading no reply.
    Flood flood(daemon->address(), 12, "", /*open=*/true, Ping(kMaxPingPayload - 64),
                /*most=*/2048);
    uint64_t held = 0;
    ASSERT_TRUE(WaitUntil(absl::Seconds(60), [&] {
      absl::StatusOr<v1::GetInfoResponse> now = InfoOf(daemon->address());
      held = now.ok() ? now->transfer_bytes_in_use() : 0;
      return held >= share;
    })) << "the flood reached " << held << " bytes of its client's " << share;
    // Another client (another user: without tenants a client is its host and user, whatever
    // name it gives) has the rest of the budget: a solve that moves more than 64 KiB per
    // request (a generated problem) reserves from it, and agrees with the reference solver.
    if (geteuid() == 0) {
      const ProgramRun solve = RunProgram(
          {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", sluice, "solve",
           problem, "--server=" + daemon->address()},
          absl::Seconds(120));
      EXPECT_EQ(solve.exit_code, 0) << solve.err;
      EXPECT_TRUE(solve.out == reference.out)
          << "the solve's answer (" << solve.out.size() << " bytes) is not the reference's ("
          << reference.out.size() << " bytes)";
    } else {
      std::cerr << "[ skipped  ] the solve beside as another user: this test runs it as the "
                   "user nobody, which needs root\n";
    }
    ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse now, InfoOf(daemon->address()));
    EXPECT_LE(now.transfer_bytes_in_use(), share + slack) << "the flood's client at its share";
    const uint64_t rss = ProcStatusBytes(pid, "VmRSS");
    std::cerr << "[ measured ] 12 streams that never read: " << now.transfer_bytes_in_use()
              << " bytes counted of their client's " << share << "; RSS " << before / kMiB
              << " MiB before, " << rss / kMiB << " MiB now\n";
    // The counted bytes, and gRPC's buffers within its quota: within what GetInfo says the
    // daemon may hold (its device buffers aside: the flood allocates none).
    EXPECT_LE(rss, before + bound.total() - bound.device_buffers());
    flood.Stop();
  }
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] {
    return ProcStatusBytes(pid, "VmRSS") <= before + 100 * kMiB;
  })) << "RSS " << before << " before the flood, " << ProcStatusBytes(pid, "VmRSS") << " after";
}

TEST(MemoryBoundsTest, ATenantsStreamsThatNeverReadHoldItsShareAndNoMore) {
  const ScopedTempDir temp{"memory-bounds"};
  const std::string tenants = temp.path() + "/tenants.toml";
  constexpr char kFlooder[] = "token-of-the-flooding-tenant-0123";
  constexpr char kSolver[] = "token-of-the-solving-tenant-4567";
  {
    std::ofstream out(tenants);
    out << "[tenants.flooder]\ntokens = [\"" << FormatTokenDigest(DigestToken(kFlooder))
        << "\"]\ntransfer_share = 0.25\nmax_sessions = 64\n\n"
        << "[tenants.solver]\ntokens = [\"" << FormatTokenDigest(DigestToken(kSolver))
        << "\"]\n";
  }
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--max_transfer_bytes=256M",
                                             "--grpc_memory=512M",
                                             "--tenants_file=" + tenants}));
  constexpr uint64_t kGrpcMemory = 512 * kMiB;
  const pid_t pid = daemon->process().pid();
  ExpectSolveThrough(daemon->address(), kSolver);
  const uint64_t before = ProcStatusBytes(pid, "VmRSS");
  const uint64_t share = 64 * kMiB;  // a quarter of 256M
  // Past its share, each stream holds at most the message it read and one request's replies.
  const uint64_t slack = 64 * 2 * kMaxPingPayload + 64 * 2 * 1024;
  {
    // 64 sessions of one tenant, each sending up to 128 MiB of pings just small enough to
    // need no reservation (so that flow control alone bounds them) and reading no reply.
    Flood flood(daemon->address(), 64, kFlooder, /*open=*/true, Ping(kMaxPingPayload - 64),
                /*most=*/2048);
    uint64_t held = 0;
    ASSERT_TRUE(WaitUntil(absl::Seconds(60), [&] {
      absl::StatusOr<v1::GetInfoResponse> info = InfoOf(daemon->address(), kFlooder);
      held = info.ok() ? info->tenant().transfer_bytes_in_use() : 0;
      return held >= share;
    })) << "the flood reached " << held << " bytes of its tenant's " << share;
    ExpectSolveThrough(daemon->address(), kSolver);
    ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse info, InfoOf(daemon->address(), kFlooder));
    EXPECT_EQ(info.tenant().transfer_bytes_limit(), share);
    EXPECT_LE(info.tenant().transfer_bytes_in_use(), share + slack);
    std::cerr << "[ measured ] the tenant holds " << info.tenant().transfer_bytes_in_use()
              << " bytes of its share of " << share << "; RSS " << before / kMiB
              << " MiB before, " << ProcStatusBytes(pid, "VmRSS") / kMiB << " MiB now, peak "
              << ProcStatusBytes(pid, "VmHWM") / kMiB << " MiB\n";
    EXPECT_LE(ProcStatusBytes(pid, "VmRSS"), before + share + slack + kGrpcMemory)
        << "the tenant's share, and gRPC's own buffers within their quota";
    flood.Stop();
  }
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] {
    absl::StatusOr<v1::GetInfoResponse> info = InfoOf(daemon->address(), kFlooder);
    return info.ok() && info->tenant().transfer_bytes_in_use() == 0 &&
           info->tenant().sessions() == 0;
  })) << "the flood's sessions end and give back what they held";
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] {
    return ProcStatusBytes(pid, "VmRSS") <= before + 100 * kMiB;
  })) << "RSS " << before << " before the flood, " << ProcStatusBytes(pid, "VmRSS") << " after";
}

// What a read's replies hold beyond their data (each reply's message and the transport's
// buffer for it) is counted too, and the data itself is held at its size. Sessions of one
// client each read a window's worth of a buffer in small chunks, take the first reply (so all
// of them have been made) and no more: the daemon's resident memory grows by no more than it
// counts (and gRPC's buffers), where it once grew a quarter more than it counted.
TEST(MemoryBoundsTest, ReadRepliesAreCountedWithWhatTheyHoldBeyondTheirData) {
  for (const uint32_t chunk : {uint32_t{4} << 10, uint32_t{16} << 10}) {
    // A daemon each: what the allocator keeps of one round would hide the next's.
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                         DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                               "--max_request_bytes=64M",
                                               "--max_transfer_bytes=1G",
                                               "--client_transfer_bytes=512M"}));
    const pid_t pid = daemon->process().pid();
    constexpr int kSessions = 16;
    const uint64_t bytes = ReadWindowBytes(chunk);
    std::vector<std::unique_ptr<RawSession>> sessions;
    std::vector<uint64_t> handles;
    // The client takes what a stream's first window of 64 KiB lets through, no more: the rest
    // stays in the daemon.
    grpc::ChannelArguments narrow;
    narrow.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    narrow.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 10);
    for (int s = 0; s < kSessions; ++s) {
      sessions.push_back(std::make_unique<RawSession>(daemon->address(), "", narrow));
      ASSERT_OK(sessions.back()->Open(chunk).status());
      v1::SessionRequest allocate;
      allocate.mutable_allocate()->set_bytes(bytes);
      v1::SessionResponse allocated;
      ASSERT_OK(sessions.back()->Call(allocate, sessions.back()->NextId(), &allocated));
      handles.push_back(allocated.allocate().handle());
      // Written before the baseline: a host whose kernel backs a read of untouched memory with
      // fresh pages (not the shared zero page) would otherwise count the buffers' pages, which
      // the device's memory holds and counts, as the replies'.
      v1::SessionRequest fill;
      v1::Step& step = *fill.mutable_execute()->add_prefix();
      step.set_kernel("fill_u32");
      step.add_params(0x5a5a5a5a);
      step.add_handles(handles.back());
      v1::SessionResponse filled;
      ASSERT_OK(sessions.back()->Call(fill, sessions.back()->NextId(), &filled));
    }
    const uint64_t before = ProcStatusBytes(pid, "VmRSS");
    for (int s = 0; s < kSessions; ++s) {
      v1::SessionRequest read;
      read.set_id(sessions[s]->NextId());
      v1::Range& range = *read.mutable_read()->add_ranges();
      range.set_handle(handles[s]);
      range.set_length(bytes);
      ASSERT_TRUE(sessions[s]->Send(read));
      v1::SessionResponse first;
      ASSERT_TRUE(sessions[s]->Next(&first));
      ASSERT_TRUE(first.has_data()) << first.status().message();
    }
    ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse info, InfoOf(daemon->address()));
    const uint64_t counted = info.transfer_bytes_in_use();
    EXPECT_GE(counted, kSessions * ReplyBytes(bytes, chunk));
    const uint64_t rss = ProcStatusBytes(pid, "VmRSS");
    std::cerr << "[ measured ] " << kSessions << " reads of " << bytes / kMiB << " MiB in "
              << chunk / 1024 << " KiB chunks: " << counted / kMiB << " MiB counted; RSS "
              << before / kMiB << " MiB before, " << rss / kMiB << " MiB with the replies made\n";
    EXPECT_LE(rss, before + counted + 8 * kMiB);
    sessions.clear();
    ExpectNothingCounted(daemon->address());
  }
}

// Execute request `id`: `steps` fills of `word`, repeated for hours (until cancelled).
v1::SessionRequest FillsUntilCancelled(uint64_t id, uint64_t steps, uint64_t word) {
  v1::SessionRequest request;
  request.set_id(id);
  v1::ExecuteRequest& execute = *request.mutable_execute();
  for (uint64_t k = 0; k < steps; ++k) {
    v1::Step& step = *execute.add_repeated();
    step.set_kernel("fill_u32");
    step.add_params(k);
    step.add_handles(word);
  }
  execute.set_repeat_count(4000000000u);
  return request;
}

// An execute's plan (over a kilobyte a step, where an empty step is two bytes on the wire) is
// counted to its client while the execute runs or waits for the device. Sessions of one
// client each run a sequence of the most steps, repeated until cancelled: the daemon counts
// every plan, and its resident memory grows by no more than it counts.
TEST(MemoryBoundsTest, AnExecutesPlanIsCountedWhileItRuns) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> daemon,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--max_request_bytes=16M",
                                             "--max_transfer_bytes=1G",
                                             "--client_transfer_bytes=512M"}));
  const pid_t pid = daemon->process().pid();
  constexpr int kSessions = 16;
  const uint64_t steps = SessionLimits{}.max_steps;
  const std::vector<uint64_t> params(1, 0);
  const std::vector<uint64_t> handles(1, 0);
  const std::vector<StepRef> fills(steps, StepRef{.kernel = "fill_u32", .params = params,
                                                  .handles = handles});
  const uint64_t plan = Session::ExecutePlanBytes({}, fills).value();
  ASSERT_GT(plan, steps * 1024);
  std::vector<std::unique_ptr<RawSession>> sessions;
  std::vector<uint64_t> words;
  for (int s = 0; s < kSessions; ++s) {
    sessions.push_back(std::make_unique<RawSession>(daemon->address()));
    ASSERT_OK(sessions.back()->Open().status());
    ASSERT_OK_AND_ASSIGN(uint64_t word, sessions.back()->Allocate(4));
    words.push_back(word);
  }
  const uint64_t before = ProcStatusBytes(pid, "VmRSS");
  for (int s = 0; s < kSessions; ++s) {
    ASSERT_TRUE(sessions[s]->Send(FillsUntilCancelled(sessions[s]->NextId(), steps, words[s])));
  }
  uint64_t counted = 0;
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] {
    absl::StatusOr<v1::GetInfoResponse> info = InfoOf(daemon->address());
    counted = info.ok() ? info->transfer_bytes_in_use() : 0;
    return counted >= kSessions * plan;
  })) << counted << " bytes counted for " << kSessions << " plans of " << plan;
  const uint64_t rss = ProcStatusBytes(pid, "VmRSS");
  std::cerr << "[ measured ] " << kSessions << " executes of " << steps << " steps, plans of "
            << plan / 1024 << " KiB: " << counted / kMiB << " MiB counted; RSS " << before / kMiB
            << " MiB before, " << rss / kMiB << " MiB with them running\n";
  EXPECT_LE(rss, before + counted + 24 * kMiB) << "the plans, and the requests and threads";
  for (std::unique_ptr<RawSession>& session : sessions) session->Cancel();
  ExpectNothingCounted(daemon->address());

  // Past its client's share a plan is refused, and the session goes on: two plans and their
  // requests fit in 14 MiB, a third request but not its plan.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> small,
                       DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G",
                                             "--max_request_bytes=4M",
                                             "--max_transfer_bytes=14M",
                                             "--client_transfer_bytes=14M"}));
  std::vector<std::unique_ptr<RawSession>> three;
  for (int s = 0; s < 3; ++s) {
    three.push_back(std::make_unique<RawSession>(small->address()));
    ASSERT_OK(three.back()->Open().status());
    ASSERT_OK_AND_ASSIGN(uint64_t word, three.back()->Allocate(4));
    v1::SessionRequest request = FillsUntilCancelled(three.back()->NextId(), steps, word);
    if (s < 2) {
      ASSERT_TRUE(three.back()->Send(request));
      EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] {
        absl::StatusOr<v1::GetInfoResponse> info = InfoOf(small->address());
        return info.ok() && info->transfer_bytes_in_use() >= (s + 1) * plan;
      }));
    } else {
      EXPECT_THAT(three.back()->Call(request, request.id()),
                  StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("plan")));
      ASSERT_OK(three.back()->Ping());
      // A kernel the catalog lacks is refused as such, whatever its plan would have needed.
      request.mutable_execute()->mutable_repeated(steps - 1)->set_kernel("no_such_kernel");
      EXPECT_THAT(three.back()->Call(request, three.back()->NextId()),
                  StatusIs(absl::StatusCode::kNotFound, HasSubstr("repeated step")));
    }
  }
  for (std::unique_ptr<RawSession>& session : three) session->Cancel();
}

}  // namespace
}  // namespace sluice::testing
