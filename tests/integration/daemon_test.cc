// The real sluiced, started on port 0, driven through RemoteDispatch and through raw protocol
// streams: large transfers, round trips, concurrent sessions, cleanup when sessions end in any
// way, the daemon dying mid-call, hostile requests, limits, drain, health and reflection.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/client/server_info.h"
#include "sluice/engine/session_manager.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/kernels/catalog.h"
#include "sluice/proto/contract.h"
#include "tests/testing/bytes.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/raw_session.h"
#include "tests/testing/remote_cpu_harness.h"
#include "tests/testing/status_matchers.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;
using Code = absl::StatusCode;

class DaemonTest : public ::testing::Test {
 protected:
  void StartDaemon(std::vector<std::string> flags = {}) {
    flags.push_back("--backend=cpu");
    // A session whose connection drops waits this long for its client to resume it, then is
    // freed: the tests below see dropped sessions freed within their bounded waits.
    if (std::none_of(flags.begin(), flags.end(), [](const std::string& f) {
          return absl::StartsWith(f, "--resume_grace=");
        })) {
      flags.push_back("--resume_grace=1s");
    }
    if (std::none_of(flags.begin(), flags.end(), [](const std::string& f) {
          return absl::StartsWith(f, "--cpu_memory=");
        })) {
      flags.push_back("--cpu_memory=4G");
    }
    ASSERT_OK_AND_ASSIGN(daemon_, DaemonProcess::Start(flags));
  }
  void SetUp() override { StartDaemon(); }

  std::unique_ptr<RemoteDispatch> Connect(const std::string& name = "test",
                                          absl::Duration timeout = absl::Seconds(60)) {
    absl::StatusOr<std::unique_ptr<RemoteDispatch>> d = RemoteDispatch::Connect(
        {.target = daemon_->address(), .client_name = name, .call_timeout = timeout});
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? std::move(*d) : nullptr;
  }

  v1::GetInfoResponse Info() {
    absl::StatusOr<v1::GetInfoResponse> info = GetServerInfo(daemon_->address(), absl::Seconds(30));
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : v1::GetInfoResponse();
  }

  // Polls GetInfo (each poll is a round trip) until `done` holds or 20 s pass.
  bool WaitForInfo(const std::function<bool(const v1::GetInfoResponse&)>& done) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      if (done(Info())) return true;
    }
    return false;
  }

  std::unique_ptr<DaemonProcess> daemon_;
};

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(bytes.data() + i, &v, 8);
  }
  for (size_t i = n - n % 8; i < n; ++i) bytes[i] = static_cast<uint8_t>(rng());
  return bytes;
}

TEST_F(DaemonTest, A256MiBBufferRoundTripsWholeAndByRanges) {
  auto d = Connect();
  const size_t size = size_t{256} << 20;
  const std::vector<uint8_t> bytes = RandomBytes(size, 42);
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(size));
  const RemoteDispatch::Counters before = d->counters();
  ASSERT_OK(d->UploadMany({{r, bytes}}));
  const RemoteDispatch::Counters after = d->counters();
  EXPECT_EQ(after.round_trips - before.round_trips, 1u);
  const uint64_t chunk = d->limits().chunk_size;
  EXPECT_EQ(after.messages_sent - before.messages_sent, (size + chunk - 1) / chunk);

  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> whole, d->Download(r));
  EXPECT_TRUE(whole == bytes) << "whole download differs";

  const std::vector<std::pair<size_t, size_t>> pieces = {
      {0, 1}, {1, 4095}, {4096, size_t{3} << 20}, {size / 2 - 7, size / 4 + 13},
      {size - 5, 5}, {size, 0}};
  std::vector<ReadRange> ranges;
  std::vector<std::vector<uint8_t>> outs(pieces.size());
  std::vector<std::vector<uint8_t>*> out_ptrs;
  for (size_t i = 0; i < pieces.size(); ++i) {
    ranges.push_back({r, pieces[i].first, pieces[i].second});
    out_ptrs.push_back(&outs[i]);
  }
  ASSERT_OK(d->DownloadRangesInto(ranges, absl::MakeSpan(out_ptrs)));
  for (size_t i = 0; i < pieces.size(); ++i) {
    EXPECT_TRUE(std::equal(outs[i].begin(), outs[i].end(), bytes.begin() + pieces[i].first) &&
                outs[i].size() == pieces[i].second)
        << "range " << i;
  }
}

TEST_F(DaemonTest, EveryInterfaceCallIsOneRoundTrip) {
  auto d = Connect();
  std::vector<Resource> buffers;
  std::vector<std::vector<uint8_t>> payloads;
  for (int i = 0; i < 50; ++i) {
    ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(1000 + 37 * i));
    buffers.push_back(r);
    payloads.push_back(RandomBytes(1000 + 37 * i, i));
  }
  std::vector<BufferUpload> uploads;
  for (int i = 0; i < 50; ++i) uploads.push_back({buffers[i], payloads[i]});
  uint64_t trips = d->counters().round_trips;
  ASSERT_OK(d->UploadMany(uploads));
  EXPECT_EQ(d->counters().round_trips, trips + 1) << "UploadMany of 50 buffers";

  const Program fill{"fill_u32", {3}};
  const Program add{"atomic_add_u32", {0, 1}};
  const std::vector<Step> steps = {{&fill, {&buffers[0], 1}, std::nullopt},
                                   {&add, {&buffers[0], 1}, std::nullopt}};
  std::vector<uint8_t> a, b;
  std::vector<std::vector<uint8_t>*> outs = {&a, &b};
  const std::vector<ReadRange> reads = {{buffers[0], 0, 8}, {buffers[1], 0, 16}};
  trips = d->counters().round_trips;
  ASSERT_OK(d->DispatchSequenceReadRangesInto(steps, reads, absl::MakeSpan(outs)));
  EXPECT_EQ(d->counters().round_trips, trips + 1) << "sequence with reads";
  EXPECT_THAT(FromBytes<uint32_t>(a), ::testing::ElementsAre(4, 3));

  trips = d->counters().round_trips;
  ASSERT_OK(d->DispatchRepeatedSequenceReadRangesInto(steps, steps, 100, reads,
                                                      absl::MakeSpan(outs)));
  EXPECT_EQ(d->counters().round_trips, trips + 1) << "repeated sequence with reads";

  // A 4-byte ranged read of a 64 MiB buffer moves a few dozen bytes, not the buffer.
  ASSERT_OK_AND_ASSIGN(Resource big, d->Allocate(64 << 20));
  const RemoteDispatch::Counters before = d->counters();
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> four, d->DownloadRange(big, 32 << 20, 4));
  const RemoteDispatch::Counters after = d->counters();
  EXPECT_EQ(four.size(), 4u);
  EXPECT_EQ(after.round_trips - before.round_trips, 1u);
  EXPECT_LT(after.bytes_received - before.bytes_received, 64u);
  EXPECT_LT(after.bytes_sent - before.bytes_sent, 64u);
}

// A call looks for its reply for Options::reply_poll before it sleeps: with a second of it every
// ping's reply is taken while the caller looks, with none every one after it slept. A poll below
// zero or past kMaxReplyPoll is refused before anything is sent.
TEST_F(DaemonTest, ACallTakesItsReplyWhileItLooksForItOnlyWhenItMayPoll) {
  for (const absl::Duration poll : {RemoteDispatch::kMaxReplyPoll, absl::ZeroDuration()}) {
    absl::StatusOr<std::unique_ptr<RemoteDispatch>> d = RemoteDispatch::Connect(
        {.target = daemon_->address(), .client_name = "poll", .reply_poll = poll});
    ASSERT_OK(d.status());
    const RemoteDispatch::Counters before = (*d)->counters();
    for (int i = 0; i < 20; ++i) ASSERT_OK((*d)->Ping(4));
    const RemoteDispatch::Counters after = (*d)->counters();
    EXPECT_EQ(after.round_trips - before.round_trips, 20u);
    EXPECT_EQ(after.replies_polled - before.replies_polled,
              poll > absl::ZeroDuration() ? 20u : 0u)
        << poll;
  }
  for (const absl::Duration poll :
       {-absl::Microseconds(1), RemoteDispatch::kMaxReplyPoll + absl::Nanoseconds(1)}) {
    EXPECT_THAT(RemoteDispatch::Connect({.target = daemon_->address(), .reply_poll = poll}),
                StatusIs(Code::kInvalidArgument, HasSubstr("reply_poll")))
        << poll;
  }
}

TEST_F(DaemonTest, PipelinedCallsWaitForNoReplyAndStillSayWhatFailed) {
  // Three sessions of this process (one client) fill the device below: the client may hold it.
  daemon_.reset();
  StartDaemon({"--client_memory=4G"});
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> connected = RemoteDispatch::Connect(
      {.target = daemon_->address(), .client_name = "pipelined", .pipelined = true});
  ASSERT_OK(connected.status());
  RemoteDispatch& d = **connected;
  ASSERT_TRUE(d.pipelined());
  // Allocations, frees and dispatches without reads go without waiting; an upload to a buffer
  // whose allocation the daemon has not run yet is checked against the size it asks.
  uint64_t trips = d.counters().round_trips;
  std::vector<Resource> buffers;
  for (int i = 0; i < 200; ++i) {
    ASSERT_OK_AND_ASSIGN(Resource r, d.Allocate(64 + 8 * i));
    buffers.push_back(r);
  }
  ASSERT_OK(d.Free(buffers[7]));
  const std::vector<uint8_t> payload = RandomBytes(64 + 8 * 199, 7);
  ASSERT_OK(d.UploadMany({{buffers.back(), payload}}));
  const Program fill{"fill_u32", {5}};
  ASSERT_OK(d.Dispatch(fill, {&buffers[0], 1}, std::nullopt));
  EXPECT_EQ(d.counters().round_trips, trips + 1) << "only the upload waited";
  std::vector<uint8_t> filled, uploaded;
  std::vector<std::vector<uint8_t>*> outs = {&filled, &uploaded};
  ASSERT_OK(d.DownloadRangesInto({{buffers[0], 0, 8}, {buffers.back(), 0, payload.size()}},
                                 absl::MakeSpan(outs)));
  EXPECT_THAT(FromBytes<uint32_t>(filled), ::testing::ElementsAre(5, 5));
  EXPECT_TRUE(uploaded == payload);
  EXPECT_EQ(d.counters().round_trips, trips + 2);
  EXPECT_GE(d.counters().unwaited, 202u);

  // What the dispatcher knows it refuses at once: a freed buffer, the session's quota.
  EXPECT_THAT(d.Dispatch(fill, {&buffers[7], 1}, std::nullopt), StatusIs(Code::kNotFound));
  EXPECT_THAT(d.Allocate(d.limits().memory_quota + 1), StatusIs(Code::kResourceExhausted));

  // What only the daemon sees comes with the next call that waits, with its own code, once.
  const Program unknown{"no_such_kernel", {}};
  ASSERT_OK(d.Dispatch(unknown, {&buffers[0], 1}, std::nullopt));
  const absl::Status reported = d.Sync();
  EXPECT_EQ(reported.code(), Code::kNotFound) << reported;
  EXPECT_THAT(reported.message(), HasSubstr("a dispatch (request"));
  EXPECT_THAT(reported.message(), HasSubstr("no_such_kernel"));
  EXPECT_OK(d.Sync());

  // An allocation the device has no room for (4 GiB, of which two other sessions hold 3),
  // within the session's quota: reported by the next call that waits, and the buffer it
  // would have been is not the session's.
  const uint64_t share = uint64_t{3} << 29;
  std::unique_ptr<RemoteDispatch> first = Connect("first"), second = Connect("second");
  ASSERT_OK(first->Allocate(share).status());
  ASSERT_OK(second->Allocate(share).status());
  if (d.limits().memory_quota >= share + (uint64_t{1} << 20)) {
    ASSERT_OK_AND_ASSIGN(Resource huge, d.Allocate(share));
    std::vector<uint8_t> again;
    const absl::Status refused = d.DownloadRangeInto(buffers[0], 0, 8, &again);
    EXPECT_EQ(refused.code(), Code::kResourceExhausted) << refused;
    EXPECT_THAT(refused.message(), HasSubstr("an allocation (request"));
    EXPECT_THAT(d.Download(huge), StatusIs(Code::kNotFound));
    EXPECT_THAT(d.Free(huge), StatusIs(Code::kNotFound));
  } else {
    ADD_FAILURE() << "the session quota " << d.limits().memory_quota
                  << " is below 1.5 GiB: this case needs it above";
  }
  // The session goes on.
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> after, d.DownloadRange(buffers.back(), 0, 16));
  EXPECT_TRUE(std::equal(after.begin(), after.end(), payload.begin()));
}

TEST_F(DaemonTest, AClientMayChooseItsHandlesAndAHandleInUseIsAlreadyExists) {
  RawSession raw(daemon_->address());
  ASSERT_OK_AND_ASSIGN(v1::OpenResponse opened, raw.Open());
  EXPECT_TRUE(opened.client_handles());
  const uint64_t chosen = 0xfeed'beef'0000'0042;
  const auto allocate = [&](uint64_t bytes, uint64_t handle, v1::SessionResponse* reply) {
    v1::SessionRequest request;
    request.mutable_allocate()->set_bytes(bytes);
    request.mutable_allocate()->set_handle(handle);
    return raw.Call(request, raw.NextId(), reply);
  };
  v1::SessionResponse reply;
  ASSERT_OK(allocate(64, chosen, &reply));
  EXPECT_EQ(reply.allocate().handle(), chosen);
  const absl::Status taken = allocate(32, chosen, &reply);
  EXPECT_EQ(taken.code(), Code::kAlreadyExists) << taken;
  EXPECT_THAT(taken.message(), HasSubstr("feedbeef00000042"));
  ASSERT_OK_AND_ASSIGN(std::string bytes, raw.Read(chosen, 0, 64));
  EXPECT_EQ(bytes, std::string(64, '\0'));
  // Pipelined: allocate, upload and read sent back to back, then the replies.
  const uint64_t next = chosen + 1;
  const uint64_t a = raw.NextId(), u = raw.NextId(), r = raw.NextId();
  v1::SessionRequest request;
  request.set_id(a);
  request.mutable_allocate()->set_bytes(8);
  request.mutable_allocate()->set_handle(next);
  ASSERT_TRUE(raw.Send(request));
  request.Clear();
  request.set_id(u);
  v1::UploadRequest& upload = *request.mutable_upload();
  v1::Range& range = *upload.add_ranges();
  range.set_handle(next);
  range.set_offset(0);
  range.set_length(8);
  upload.set_data("pipeline");
  upload.set_last(true);
  ASSERT_TRUE(raw.Send(request));
  request.Clear();
  request.set_id(r);
  v1::Range& read = *request.mutable_read()->add_ranges();
  read.set_handle(next);
  read.set_offset(0);
  read.set_length(8);
  ASSERT_TRUE(raw.Send(request));
  std::vector<v1::SessionResponse> others;
  std::string data;
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse last, raw.Await(r, &data, &others));
  ASSERT_EQ(others.size(), 2u);
  EXPECT_EQ(others[0].status().code(), 0) << others[0].status().message();
  EXPECT_EQ(others[1].status().code(), 0) << others[1].status().message();
  EXPECT_EQ(last.status().code(), 0) << last.status().message();
  EXPECT_EQ(data, "pipeline");
}

TEST_F(DaemonTest, ConcurrentSessionsNeverSeeEachOthersBuffers) {
  constexpr int kSessions = 8;
  std::vector<std::unique_ptr<RemoteDispatch>> sessions;
  for (int s = 0; s < kSessions; ++s) sessions.push_back(Connect("session-" + std::to_string(s)));
  std::vector<std::vector<Resource>> kept(kSessions);
  std::vector<std::vector<std::vector<uint8_t>>> expected(kSessions);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < kSessions; ++s) {
    threads.emplace_back([&, s] {
      RemoteDispatch& d = *sessions[s];
      std::mt19937_64 rng(1000 + s);
      for (int round = 0; round < 40; ++round) {
        const size_t n = 4 * (1 + rng() % 5000);
        absl::StatusOr<Resource> r = d.Allocate(n);
        if (!r.ok()) { ++failures; return; }
        std::vector<uint8_t> bytes(n, static_cast<uint8_t>(s + 1));
        if (round % 3 == 0) {
          // Let the device write it: fill with a session-specific word.
          const uint32_t word = 0x01010101u * static_cast<uint32_t>(s + 1);
          if (!d.Dispatch(Program{"fill_u32", {word}}, {&*r, 1}, std::nullopt).ok()) ++failures;
        } else if (!d.Upload(*r, bytes).ok()) {
          ++failures;
        }
        absl::StatusOr<std::vector<uint8_t>> back = d.Download(*r);
        if (!back.ok() || *back != bytes) ++failures;
        if (rng() % 2 == 0) {
          if (!d.Free(*r).ok()) ++failures;
        } else {
          kept[s].push_back(*r);
          expected[s].push_back(bytes);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  // Every kept buffer still holds its own session's bytes.
  for (int s = 0; s < kSessions; ++s) {
    for (size_t i = 0; i < kept[s].size(); ++i) {
      ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> back, sessions[s]->Download(kept[s][i]));
      EXPECT_EQ(back, expected[s][i]) << "session " << s << " buffer " << i;
    }
  }
  // Another session's handle is unknown to a session, even with the right number.
  RawSession raw(daemon_->address());
  ASSERT_OK(raw.Open().status());
  ASSERT_FALSE(kept[0].empty());
  EXPECT_THAT(raw.Read(kept[0][0].id(), 0, 4), StatusIs(Code::kNotFound));
  v1::SessionRequest free;
  free.mutable_free()->set_handle(kept[0][0].id());
  EXPECT_THAT(raw.Call(free, raw.NextId()), StatusIs(Code::kNotFound));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> still, sessions[0]->Download(kept[0][0]));
  EXPECT_EQ(still, expected[0][0]);
}

TEST_F(DaemonTest, LongWindowsInOtherSessionsDoNotHoldBackASessionsRequests) {
  // More sessions running endless windows than the daemon once had threads for its sessions'
  // work (max(4, cores)): a new session's requests must still be served, within its timeout.
  const int busy_count = static_cast<int>(std::max(8u, std::thread::hardware_concurrency() + 2));
  std::vector<std::unique_ptr<RawSession>> busy;
  std::vector<uint64_t> buffers;
  for (int i = 0; i < busy_count; ++i) {
    busy.push_back(std::make_unique<RawSession>(daemon_->address()));
    ASSERT_OK(busy.back()->Open().status());
    ASSERT_OK_AND_ASSIGN(uint64_t buffer, busy.back()->Allocate(64 << 10));
    buffers.push_back(buffer);
  }
  for (int i = 0; i < busy_count; ++i) {
    // Four billion fills of 64 KiB: hours of work, ended by cancelling.
    v1::SessionRequest request;
    request.set_id(busy[i]->NextId());
    v1::ExecuteRequest& execute = *request.mutable_execute();
    v1::Step& step = *execute.add_repeated();
    step.set_kernel("fill_u32");
    step.add_params(i);
    step.add_handles(buffers[i]);
    execute.set_repeat_count(4000000000u);
    ASSERT_TRUE(busy[i]->Send(request));
  }
  ASSERT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.devices(0).counters().launches() > 1000;
  })) << "the windows never started";

  auto d = Connect("newcomer", absl::Seconds(20));
  ASSERT_NE(d, nullptr);
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(1 << 20));
  ASSERT_OK(d->Dispatch(Program{"fill_u32", {7}}, {&r, 1}, std::nullopt));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> word, d->DownloadRange(r, 4096, 4));
  EXPECT_EQ(word, std::vector<uint8_t>({7, 0, 0, 0}));
  ASSERT_OK(d->Free(r));

  busy.clear();  // cancels the streams, which ends their windows
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.active_sessions() == 1 && i.devices(0).memory().used() == 0;
  })) << "cancelled windows end and free their buffers";
}

TEST_F(DaemonTest, EndingASessionInAnyWayFreesItsMemory) {
  EXPECT_EQ(Info().devices(0).memory().used(), 0u);
  {
    auto d = Connect();
    for (int i = 0; i < 3; ++i) ASSERT_OK(d->Allocate(10 << 20).status());
    const v1::GetInfoResponse info = Info();
    EXPECT_EQ(info.devices(0).memory().used(), uint64_t{30} << 20);
    EXPECT_EQ(info.active_sessions(), 1u);
  }
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.devices(0).memory().used() == 0 && i.active_sessions() == 0;
  })) << "a closed session frees its buffers";

  {
    RawSession raw(daemon_->address());
    ASSERT_OK(raw.Open().status());
    ASSERT_OK(raw.Allocate(5 << 20).status());
    raw.Cancel();
  }
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.devices(0).memory().used() == 0 && i.active_sessions() == 0;
  })) << "a cancelled session frees its buffers";

  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ChildProcess> client,
      ChildProcess::Spawn({BinaryPath("sluice_crash_client"), daemon_->address(), "7340032"}));
  ASSERT_OK_AND_ASSIGN(std::string ready, client->ReadLine(absl::Seconds(30)));
  ASSERT_EQ(ready, "ready") << client->Stderr();
  EXPECT_EQ(Info().devices(0).memory().used(), 7340032u);
  ASSERT_OK(client->SignalAndWait(SIGKILL, absl::Seconds(30)).status());
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.devices(0).memory().used() == 0 && i.active_sessions() == 0;
  })) << "a dropped connection frees its buffers";
}

TEST_F(DaemonTest, KillingTheDaemonDuringACallGivesUnavailableWithinTheDeadline) {
  const absl::Duration deadline = absl::Seconds(60);
  auto d = Connect("victim", deadline);
  ASSERT_OK_AND_ASSIGN(Resource counter, d->Allocate(4));
  const Program add{"atomic_add_u32", {0, 1}};
  const Step step{&add, {&counter, 1}, std::nullopt};
  absl::Status status;
  absl::Time returned;
  std::thread caller([&] {
    // About a minute of device work: the daemon dies long before it ends.
    status = d->DispatchRepeatedSequenceReadRangesInto({}, {&step, 1}, 4000000000u, {}, {});
    returned = absl::Now();
  });
  ASSERT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.devices(0).counters().launches() > 1000;
  })) << "the long call never started";
  const absl::Time killed = absl::Now();
  ASSERT_OK(daemon_->process().SignalAndWait(SIGKILL, absl::Seconds(30)).status());
  caller.join();
  EXPECT_THAT(status, StatusIs(Code::kUnavailable));
  EXPECT_LT(returned - killed, deadline);
  EXPECT_THAT(d->Allocate(4), StatusIs(Code::kUnavailable)) << "later calls fail at once";
}

TEST(DaemonStartTest, AnAddressItCannotListenOnEndsItWithAMessageNotACrash) {
  // 192.0.2.1 is TEST-NET-1: never an address of this machine.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChildProcess> daemon,
                       ChildProcess::Spawn({BinaryPath("sluiced"), "--backend=cpu",
                                            "--listen=192.0.2.1:0", "--allow_unauthenticated"}));
  ASSERT_OK_AND_ASSIGN(int status, daemon->Wait(absl::Seconds(60)));
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal: " << daemon->Stderr();
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_THAT(daemon->Stderr(), HasSubstr("cannot listen on 192.0.2.1:0"));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ChildProcess> small,
      ChildProcess::Spawn({BinaryPath("sluiced"), "--backend=cpu", "--listen=127.0.0.1:0",
                           "--max_request_bytes=64M", "--max_transfer_bytes=32M"}));
  ASSERT_OK_AND_ASSIGN(status, small->Wait(absl::Seconds(60)));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << small->Stderr();
  EXPECT_THAT(small->Stderr(), HasSubstr("--max_transfer_bytes (33554432) must be at least"));
}

// A port another daemon serves is in use: a second daemon ends saying so, where gRPC's
// default (SO_REUSEPORT) would have it listen too and split the clients between the two. A port
// past 65535 or not a number is a bad flag, not a port gRPC wraps or fails on.
TEST_F(DaemonTest, APortInUseOrPastItsRangeEndsASecondDaemonWithAMessage) {
  const std::string address = daemon_->address();
  ASSERT_TRUE(absl::StartsWith(address, "127.0.0.1:")) << address;
  const auto start = [](const std::vector<std::string>& flags) -> std::pair<int, std::string> {
    std::vector<std::string> argv = {BinaryPath("sluiced"), "--backend=cpu", "--cpu_memory=64M"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    absl::StatusOr<std::unique_ptr<ChildProcess>> daemon = ChildProcess::Spawn(argv);
    if (!daemon.ok()) return {-1, std::string(daemon.status().message())};
    absl::StatusOr<int> status = (*daemon)->Wait(absl::Seconds(60));
    if (!status.ok()) {
      (*daemon)->SignalAndWait(SIGKILL, absl::Seconds(30)).IgnoreError();
      return {-2, "still running: " + (*daemon)->Stderr()};
    }
    if (!WIFEXITED(*status)) return {-3, "killed by a signal: " + (*daemon)->Stderr()};
    return {WEXITSTATUS(*status), (*daemon)->Stderr()};
  };
  const auto [in_use, said] = start({"--listen=" + address});
  EXPECT_EQ(in_use, 1) << said;
  EXPECT_THAT(said, HasSubstr(absl::StrCat("cannot listen on ", address, " (in use")));
  const auto [health_in_use, health_said] =
      start({"--listen=127.0.0.1:0", "--health_listen=" + address});
  EXPECT_EQ(health_in_use, 1) << health_said;
  EXPECT_THAT(health_said, HasSubstr("cannot serve health checks on"));
  for (const std::string bad : {"127.0.0.1:99999", "127.0.0.1:65536", "127.0.0.1:abc",
                                "127.0.0.1:-1", "127.0.0.1:"}) {
    const auto [code, message] = start({"--listen=" + bad});
    EXPECT_EQ(code, 2) << bad << ": " << message;
    EXPECT_THAT(message, HasSubstr("a port from 0 to 65535")) << bad;
  }
  // The first daemon serves on.
  EXPECT_OK(Connect()->Ping());
}

// What a header or a message cannot carry is refused by the client, which says why: a token
// that is not printable ASCII (gRPC aborted the process on it), a client name or a kernel name
// that is not UTF-8 (the daemon ended the stream on it, and every buffer with it). A long
// client name is cut to what the daemon keeps.
TEST_F(DaemonTest, WhatAHeaderOrAMessageCannotCarryIsRefusedByTheClient) {
  for (const std::string& token :
       {std::string("abc\ndef"), std::string("abc\r"), std::string("s3cr\xc3\xa9t"),
        std::string("a b"), std::string(4097, 'x')}) {
    ClientCredentials credentials;
    credentials.token = token;
    EXPECT_THAT(RemoteDispatch::Connect({.target = daemon_->address(),
                                         .credentials = credentials}),
                StatusIs(Code::kInvalidArgument, HasSubstr("token")))
        << absl::CEscape(token.substr(0, 16));
    EXPECT_THAT(GetServerInfo(daemon_->address(), absl::Seconds(30), credentials),
                StatusIs(Code::kInvalidArgument, HasSubstr("token")));
  }
  EXPECT_THAT(RemoteDispatch::Connect({.target = daemon_->address(), .client_name = "a\xff"}),
              StatusIs(Code::kInvalidArgument, HasSubstr("UTF-8")));
  const std::string long_name = std::string(127, 'n') + "\xc3\xa9" + std::string(65536, 'n');
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> named =
      RemoteDispatch::Connect({.target = daemon_->address(), .client_name = long_name});
  ASSERT_OK(named.status()) << "cut to what the daemon keeps, where a character begins";
  ASSERT_OK((*named)->Ping());
  EXPECT_THAT(daemon_->process().Stderr(),
              HasSubstr(absl::StrCat("opened by \"", std::string(127, 'n'), "\"")));

  auto d = Connect();
  ASSERT_OK_AND_ASSIGN(Resource word, d->Allocate(4));
  ASSERT_OK(d->Upload(word, {7, 0, 0, 0}));
  const Program bad{"atomic_add_u32\xc3", {0, 1}};
  EXPECT_THAT(d->Dispatch(bad, {&word, 1}, std::nullopt),
              StatusIs(Code::kNotFound, HasSubstr("not UTF-8")));
  EXPECT_OK(d->Ping()) << "the session goes on";
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> bytes, d->Download(word));
  EXPECT_EQ(bytes, (std::vector<uint8_t>{7, 0, 0, 0})) << "and holds its buffers";
}

// Flags past what a daemon can take end it with a message and exit code 2 (they aborted it,
// or read without end, or started a daemon that refused every session).
TEST(DaemonStartTest, FlagsPastWhatTheDaemonCanTakeEndItWithAMessage) {
  const std::string dir = ::testing::TempDir();
  for (const auto& [flag, said] : std::vector<std::pair<std::string, std::string>>{
           {"--cpu_threads=2147483647", "from 0 (one per hardware thread) to 1024"},
           {"--max_sessions=0", "--max_sessions must be at least 1"},
           {"--tls_cert=" + dir, "it is a directory"},
           {"--tls_cert=/dev/zero", "is larger than"}}) {
    std::vector<std::string> argv = {BinaryPath("sluiced"), "--backend=cpu", "--cpu_memory=64M",
                                     "--listen=127.0.0.1:0", flag};
    if (absl::StartsWith(flag, "--tls_cert")) argv.push_back("--tls_key=" + dir);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChildProcess> daemon, ChildProcess::Spawn(argv));
    ASSERT_OK_AND_ASSIGN(int status, daemon->Wait(absl::Seconds(60)));
    ASSERT_TRUE(WIFEXITED(status)) << flag << ": killed by a signal: " << daemon->Stderr();
    EXPECT_EQ(WEXITSTATUS(status), 2) << flag << ": " << daemon->Stderr();
    EXPECT_THAT(daemon->Stderr(), HasSubstr(said)) << flag;
  }
}

TEST_F(DaemonTest, ConnectingToNothingIsUnavailable) {
  ASSERT_OK(daemon_->process().SignalAndWait(SIGKILL, absl::Seconds(30)).status());
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> d = RemoteDispatch::Connect(
      {.target = daemon_->address(), .connect_timeout = absl::Seconds(2)});
  EXPECT_THAT(d, StatusIs(Code::kUnavailable));
}

TEST_F(DaemonTest, HostileRequestsGetSpecificCodesAndHarmNoOne) {
  // A bystander session whose data must survive everything below.
  auto bystander = Connect("bystander");
  const std::vector<uint8_t> precious = RandomBytes(4096, 7);
  ASSERT_OK_AND_ASSIGN(Resource kept, bystander->Allocate(precious.size()));
  ASSERT_OK(bystander->Upload(kept, precious));

  RawSession raw(daemon_->address());
  EXPECT_THAT(raw.Allocate(16), StatusIs(Code::kFailedPrecondition)) << "before open";
  v1::SessionRequest early;
  v1::Range& early_range = *early.mutable_upload()->add_ranges();
  early_range.set_handle(1);
  early_range.set_length(uint64_t{1} << 30);  // never held: refused at its first message
  early.mutable_upload()->set_data(std::string(4096, 'e'));
  early.mutable_upload()->set_last(true);
  EXPECT_THAT(raw.Call(early, raw.NextId()), StatusIs(Code::kFailedPrecondition))
      << "an upload before open";
  EXPECT_OK(raw.Ping()) << "ping needs no open session";
  // Nor does a cancel, which may cancel the open itself: before one it finds nothing.
  v1::SessionRequest cancel;
  cancel.mutable_cancel()->set_target(raw.NextId() + 5);
  EXPECT_THAT(raw.Call(cancel, raw.NextId()), StatusIs(Code::kNotFound));
  ASSERT_OK_AND_ASSIGN(v1::OpenResponse open, raw.Open(4096));
  EXPECT_EQ(open.limits().chunk_size(), 4096u);
  EXPECT_THAT(raw.Open().status(), StatusIs(Code::kFailedPrecondition)) << "open twice";

  ASSERT_OK_AND_ASSIGN(uint64_t h, raw.Allocate(64));
  EXPECT_THAT(raw.Read(h ^ 1, 0, 4), StatusIs(Code::kNotFound)) << "unknown handle";
  EXPECT_THAT(raw.Read(kept.id(), 0, 4), StatusIs(Code::kNotFound)) << "another session's";
  EXPECT_THAT(raw.Read(h, 60, 5), StatusIs(Code::kOutOfRange)) << "read past the end";
  EXPECT_THAT(raw.Read(h, ~uint64_t{0}, 2), StatusIs(Code::kOutOfRange)) << "wrapping offset";
  EXPECT_THAT(raw.Allocate(~uint64_t{0}), StatusIs(Code::kResourceExhausted));
  EXPECT_THAT(raw.Allocate(uint64_t{1} << 50), StatusIs(Code::kResourceExhausted));

  v1::SessionRequest empty;
  EXPECT_THAT(raw.Call(empty, raw.NextId()), StatusIs(Code::kInvalidArgument)) << "no op";

  // A chunk larger than the negotiated 4096 bytes.
  v1::SessionRequest oversized;
  v1::UploadRequest& up = *oversized.mutable_upload();
  v1::Range& range = *up.add_ranges();
  range.set_handle(h);
  range.set_length(64);
  up.set_data(std::string(5000, 'x'));
  up.set_last(true);
  EXPECT_THAT(raw.Call(oversized, raw.NextId()), StatusIs(Code::kInvalidArgument));
  // Data that does not match its ranges.
  up.set_data(std::string(10, 'x'));
  EXPECT_THAT(raw.Call(oversized, raw.NextId()), StatusIs(Code::kInvalidArgument));
  // An upload interrupted by another request.
  v1::SessionRequest first = oversized;
  first.mutable_upload()->set_last(false);
  first.set_id(raw.NextId());
  v1::SessionRequest ping;
  ping.mutable_ping();
  ping.set_id(raw.NextId());
  ASSERT_TRUE(raw.Send(first));
  ASSERT_TRUE(raw.Send(ping));
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse interrupted, raw.Await(first.id()));
  EXPECT_EQ(interrupted.status().code(), static_cast<int>(Code::kInvalidArgument));
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse pong, raw.Await(ping.id()));
  EXPECT_EQ(pong.status().code(), 0) << "the interrupting request still runs";

  v1::SessionRequest execute;
  v1::Step& step = *execute.mutable_execute()->add_prefix();
  step.set_kernel(std::string(100000, '\x01'));
  step.add_handles(h);
  EXPECT_THAT(raw.Call(execute, raw.NextId()), StatusIs(Code::kNotFound)) << "unknown kernel";
  step.set_kernel("fill_u32");
  step.add_params(1);
  step.add_handles(h);
  EXPECT_THAT(raw.Call(execute, raw.NextId()), StatusIs(Code::kInvalidArgument))
      << "binding count";
  step.clear_handles();
  step.add_handles(kept.id());
  EXPECT_THAT(raw.Call(execute, raw.NextId()), StatusIs(Code::kNotFound)) << "foreign binding";

  v1::SessionRequest big_ping;
  big_ping.mutable_ping()->set_payload(std::string(100 << 10, 'p'));
  EXPECT_THAT(raw.Call(big_ping, raw.NextId()), StatusIs(Code::kInvalidArgument));

  EXPECT_OK(raw.Ping()) << "the hostile session itself still works";
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> after, bystander->Download(kept));
  EXPECT_EQ(after, precious);
  EXPECT_TRUE(raw.Finish().ok());
}

TEST_F(DaemonTest, ABadUploadIsAnsweredAtItsFirstMessageAndItsLaterMessagesAreDropped) {
  RawSession raw(daemon_->address());
  ASSERT_OK(raw.Open(4096).status());
  ASSERT_OK_AND_ASSIGN(uint64_t h, raw.Allocate(64));
  const auto first_message = [&](uint64_t id, uint64_t handle, uint64_t offset, uint64_t length) {
    v1::SessionRequest request;
    request.set_id(id);
    v1::Range& range = *request.mutable_upload()->add_ranges();
    range.set_handle(handle);
    range.set_offset(offset);
    range.set_length(length);
    return request;  // no data yet, not the last message
  };
  struct Case {
    uint64_t handle, offset, length;
    Code code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {h, 0, 1 << 20, Code::kOutOfRange, "upload range 0: the range at offset 0 of length"},
      {h ^ 1, 0, 16, Code::kNotFound, "upload range 0: no buffer with handle"},
      {h, 0, uint64_t{5} << 30, Code::kResourceExhausted, "per-request limit"},
  };
  for (const Case& c : cases) {
    // The reply comes with no data sent: a client can stop on it.
    const uint64_t id = raw.NextId();
    ASSERT_TRUE(raw.Send(first_message(id, c.handle, c.offset, c.length)));
    ASSERT_OK_AND_ASSIGN(v1::SessionResponse refused, raw.Await(id));
    EXPECT_EQ(refused.status().code(), static_cast<int>(c.code)) << refused.status().message();
    EXPECT_THAT(refused.status().message(), HasSubstr(c.message));
    // A client that sends the rest anyway gets no second reply: its messages are dropped.
    for (int chunk = 0; chunk < 3; ++chunk) {
      v1::SessionRequest more;
      more.set_id(id);
      more.mutable_upload()->set_data(std::string(4096, 'x'));
      more.mutable_upload()->set_last(chunk == 2);
      ASSERT_TRUE(raw.Send(more));
    }
    v1::SessionRequest ping;
    ping.mutable_ping();
    const uint64_t ping_id = raw.NextId();
    ping.set_id(ping_id);
    ASSERT_TRUE(raw.Send(ping));
    std::vector<v1::SessionResponse> others;
    ASSERT_OK_AND_ASSIGN(v1::SessionResponse pong, raw.Await(ping_id, nullptr, &others));
    EXPECT_EQ(pong.status().code(), 0);
    EXPECT_TRUE(others.empty()) << "a second reply to upload " << id << ": "
                                << others.front().status().message();
  }
  EXPECT_EQ(Info().transfer_bytes_in_use(), 0u) << "no data of a refused upload is held";
  ASSERT_OK_AND_ASSIGN(std::string bytes, raw.Read(h, 0, 64));
  EXPECT_EQ(bytes, std::string(64, '\0'));
}

TEST_F(DaemonTest, AnUploadCutOffByAnotherRequestGetsExactlyOneReply) {
  RawSession raw(daemon_->address());
  ASSERT_OK(raw.Open(4096).status());
  ASSERT_OK_AND_ASSIGN(uint64_t h, raw.Allocate(64));
  // Upload U's first half, a ping P, U's second half (breaking the back-to-back rule), ping Q.
  const uint64_t u = raw.NextId(), p = raw.NextId(), q = raw.NextId();
  v1::SessionRequest first;
  first.set_id(u);
  v1::Range& range = *first.mutable_upload()->add_ranges();
  range.set_handle(h);
  range.set_length(64);
  first.mutable_upload()->set_data(std::string(32, 'a'));
  v1::SessionRequest second;
  second.set_id(u);
  second.mutable_upload()->set_data(std::string(32, 'b'));
  second.mutable_upload()->set_last(true);
  v1::SessionRequest ping_p, ping_q;
  ping_p.set_id(p);
  ping_p.mutable_ping();
  ping_q.set_id(q);
  ping_q.mutable_ping();
  for (const v1::SessionRequest* message : {&first, &ping_p, &second, &ping_q}) {
    ASSERT_TRUE(raw.Send(*message));
  }
  std::vector<v1::SessionResponse> before_q;
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse pong_q, raw.Await(q, nullptr, &before_q));
  EXPECT_EQ(pong_q.status().code(), 0);
  ASSERT_EQ(before_q.size(), 2u) << "one final reply each for U and P, and none more";
  EXPECT_EQ(before_q[0].id(), u);
  EXPECT_EQ(before_q[0].status().code(), static_cast<int>(Code::kInvalidArgument));
  EXPECT_THAT(before_q[0].status().message(), HasSubstr("interrupted by request"));
  EXPECT_EQ(before_q[1].id(), p);
  EXPECT_EQ(before_q[1].status().code(), 0);
  ASSERT_OK_AND_ASSIGN(std::string bytes, raw.Read(h, 0, 64));
  EXPECT_EQ(bytes, std::string(64, '\0')) << "nothing of the cut-off upload was written";
}

// A seeded stream of random requests: every kind of operation, on handles that exist, were
// freed, belong to another session or never were; ranges anywhere; uploads whose data is short,
// long or cut off by another request; every kernel with random parameters and bindings;
// repeated groups; reads in sequences. Every request must get a reply with a specific code
// (never INTERNAL, UNKNOWN or DATA_LOSS), the daemon must survive, no other session may be
// touched, and every buffer must be freed when the streams end.
TEST_F(DaemonTest, ASeededStormOfRandomRequestsHarmsNoOneAndLeaksNothing) {
  // Device memory enough for what the storm allocates that fits, little enough that kernels
  // filling its buffers stay cheap.
  daemon_.reset();
  StartDaemon({"--cpu_memory=256M"});
  auto bystander = Connect("bystander");
  const std::vector<uint8_t> precious = RandomBytes(4096, 13);
  ASSERT_OK_AND_ASSIGN(Resource kept, bystander->Allocate(precious.size()));
  ASSERT_OK(bystander->Upload(kept, precious));
  const uint64_t foreign = kept.id();

  std::vector<std::string> kernels = {"no_such_kernel", ""};
  const v1::GetInfoResponse info = Info();
  for (const v1::KernelInfo& k : info.kernels()) kernels.push_back(k.name());
  std::mt19937_64 rng(424242);
  const auto below = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
  int replies = 0, ok_replies = 0, streams = 0;
  for (int session = 0; session < 6; ++session) {
    auto raw = std::make_unique<RawSession>(daemon_->address());
    ++streams;
    if (below(8) != 0) {
      ASSERT_OK(raw->Open(4096).status());
    }
    std::vector<uint64_t> handles = {foreign, 0, ~uint64_t{0}};
    const auto handle = [&] { return handles[below(handles.size())]; };
    const auto size = [&]() -> uint64_t {
      switch (below(8)) {
        case 0: return 0;
        case 1: return ~uint64_t{0} - below(8);
        case 2: return uint64_t{1} << (20 + below(44));
        default: return below(9000);
      }
    };
    const auto range = [&](v1::Range* r) {
      r->set_handle(handle());
      r->set_offset(below(4) == 0 ? size() : below(300));
      r->set_length(below(4) == 0 ? size() : below(300));
    };
    for (int n = 0; n < 250; ++n) {
      v1::SessionRequest request;
      const uint64_t id = raw->NextId();
      request.set_id(id);
      bool await = true;
      switch (below(8)) {
        case 0:
          request.mutable_allocate()->set_bytes(below(3) == 0 ? size() : below(5000));
          break;
        case 1: {
          v1::UploadRequest& up = *request.mutable_upload();
          const uint64_t ranges = below(4);
          uint64_t total = 0;
          for (uint64_t k = 0; k < ranges; ++k) {
            range(up.add_ranges());
            total += up.ranges(static_cast<int>(k)).length();
          }
          // Mostly the right amount of data in one message; or too little, too much, or an
          // upload left open (the next request cuts it off).
          const uint64_t data = total <= 4096 && below(3) != 0 ? total : below(5000);
          up.set_data(std::string(data, 'u'));
          up.set_last(below(5) != 0);
          await = up.last();
          break;
        }
        case 2:
          for (uint64_t k = below(4); k > 0; --k) range(request.mutable_read()->add_ranges());
          break;
        case 3:
          request.mutable_free()->set_handle(handle());
          break;
        case 4:
        case 5: {
          v1::ExecuteRequest& ex = *request.mutable_execute();
          for (int part = 0; part < 2; ++part) {
            for (uint64_t k = below(3); k > 0; --k) {
              v1::Step& step = part == 0 ? *ex.add_prefix() : *ex.add_repeated();
              step.set_kernel(kernels[below(kernels.size())]);
              for (uint64_t q = below(4); q > 0; --q) {
                step.add_params(below(10) == 0 ? rng() : below(300));
              }
              for (uint64_t q = below(19); q > 0; --q) step.add_handles(handle());
              if (below(6) == 0) {
                step.mutable_grid()->set_x(static_cast<uint32_t>(below(2000)));
                step.mutable_grid()->set_y(1 + static_cast<uint32_t>(below(2)));
                step.mutable_grid()->set_z(1);
              }
            }
          }
          ex.set_repeat_count(static_cast<uint32_t>(below(4)));
          for (uint64_t k = below(3); k > 0; --k) range(ex.add_reads());
          break;
        }
        case 6:
          request.mutable_ping()->set_payload(std::string(below(3) == 0 ? 70000 : below(64), 'p'));
          break;
        default:
          if (below(2) == 0) request.mutable_open()->set_chunk_size(static_cast<uint32_t>(rng()));
          break;  // otherwise no operation at all
      }
      if (!raw->Send(request)) break;  // the daemon ended this stream
      if (!await) continue;
      // Replies to uploads left open arrive before this one's (the next request cuts them
      // off): they are checked too.
      std::vector<v1::SessionResponse> earlier;
      absl::StatusOr<v1::SessionResponse> reply = raw->Await(id, nullptr, &earlier);
      if (reply.ok()) earlier.push_back(*reply);
      for (const v1::SessionResponse& r : earlier) {
        ++replies;
        const int code = r.status().code();
        ok_replies += code == 0;
        ASSERT_NE(code, static_cast<int>(Code::kInternal)) << r.status().message();
        ASSERT_NE(code, static_cast<int>(Code::kUnknown)) << r.status().message();
        ASSERT_NE(code, static_cast<int>(Code::kDataLoss)) << r.status().message();
        if (r.has_allocate() && code == 0) handles.push_back(r.allocate().handle());
      }
      if (!reply.ok()) break;  // the stream ended: a protocol violation ends only it
    }
    if (below(2) == 0) raw->Finish().ok();  // else the stream is cancelled by the destructor
  }
  EXPECT_GT(replies, 1000);
  EXPECT_GT(ok_replies, 200) << "the storm must reach work that runs, not only refusals";
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> after, bystander->Download(kept));
  EXPECT_EQ(after, precious);
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.devices(0).memory().used() == 4096 && i.active_sessions() == 1 &&
           i.transfer_bytes_in_use() == 0;
  })) << "every stream's buffers and transfer memory are given back";
  EXPECT_EQ(streams, 6);
}

// The first message of an upload of `length` bytes into `handle`, with one chunk of data.
v1::SessionRequest UploadStart(uint64_t id, uint64_t handle, uint64_t length, size_t chunk) {
  v1::SessionRequest request;
  request.set_id(id);
  v1::Range& range = *request.mutable_upload()->add_ranges();
  range.set_handle(handle);
  range.set_length(length);
  request.mutable_upload()->set_data(std::string(chunk, 'u'));
  request.mutable_upload()->set_last(chunk == length);
  return request;
}

// What an upload of `data` bytes holds: its data in the daemon's blocks, whose huge pages count
// whole once the data reaches them (2 MiB), its ranges and its blocks' places (at most a few
// KiB more for the uploads of these tests).
bool UploadHolds(uint64_t in_use, uint64_t data) {
  constexpr uint64_t kHugePage = uint64_t{2} << 20;
  const uint64_t pages = (data + kHugePage - 1) / kHugePage * kHugePage;
  return in_use >= pages && in_use <= pages + (4 << 10);
}

// A read or an upload of more ranges than --max_ranges is refused, INVALID_ARGUMENT naming
// the limit, and the session goes on.
TEST_F(DaemonTest, MoreRangesThanTheLimitAreRefusedNamingIt) {
  RawSession raw(daemon_->address());
  ASSERT_OK(raw.Open().status());
  ASSERT_OK_AND_ASSIGN(uint64_t handle, raw.Allocate(4096));
  const uint64_t limit = SessionLimits{}.max_ranges;
  v1::SessionRequest read;
  v1::SessionRequest upload;
  for (uint64_t i = 0; i <= limit; ++i) {
    for (v1::Range* range : {read.mutable_read()->add_ranges(),
                             upload.mutable_upload()->add_ranges()}) {
      range->set_handle(handle);
      range->set_length(1);
    }
  }
  upload.mutable_upload()->set_last(true);
  EXPECT_THAT(raw.Call(read, raw.NextId()),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr(absl::StrFormat("%d reads in one operation; the limit is %d",
                                                 limit + 1, limit))));
  EXPECT_THAT(raw.Call(upload, raw.NextId()),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr(absl::StrFormat("%d ranges in one upload; the limit is %d",
                                                 limit + 1, limit))));
  EXPECT_OK(raw.Ping());
}

// An upload of little data but many ranges holds its ranges' copy (65536 of one byte each:
// 1.5 MiB) from its first message on: that is counted in its client's share while it is
// assembled, not only once it is whole. The count then lies between 16 and 40 bytes a range
// (below what the message held while it was parsed, reserved before it), and goes with the
// stream.
TEST_F(DaemonTest, ASmallUploadOfManyRangesIsCountedWhileItIsAssembled) {
  constexpr uint64_t kRanges = 65536;
  auto raw = std::make_unique<RawSession>(daemon_->address());
  ASSERT_OK(raw->Open(1 << 16).status());
  ASSERT_OK_AND_ASSIGN(uint64_t handle, raw->Allocate(kRanges));
  v1::SessionRequest first;
  first.set_id(raw->NextId());
  for (uint64_t i = 0; i < kRanges; ++i) {
    v1::Range& range = *first.mutable_upload()->add_ranges();
    range.set_handle(handle);
    range.set_offset(i);
    range.set_length(1);
  }
  first.mutable_upload()->set_data(std::string(1024, 'r'));  // and no last chunk
  ASSERT_TRUE(raw->Send(first));
  uint64_t in_use = 0;
  EXPECT_TRUE(WaitForInfo([&](const v1::GetInfoResponse& i) {
    in_use = i.transfer_bytes_in_use();
    return in_use >= kRanges * 16 && in_use <= kRanges * 40;
  })) << in_use << " bytes counted for an unfinished upload of " << kRanges << " ranges";
  raw.reset();
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.transfer_bytes_in_use() == 0;
  })) << "what the upload held goes with its stream";
}

TEST_F(DaemonTest, TransfersInFlightShareADaemonWideBudget) {
  // Room for two 8 MiB uploads in flight, all sessions together, for the huge page the second
  // reaches before it fills it beside its last chunk as that is parsed, and for the small
  // messages and replies that are counted beside them.
  daemon_.reset();
  StartDaemon({"--max_request_bytes=8M", "--max_transfer_bytes=18560K",
               "--client_transfer_bytes=18560K", "--chunk_size=1M"});
  constexpr uint64_t kBudget = uint64_t{18560} << 10;
  constexpr uint64_t kBig = 8 << 20;
  std::vector<std::unique_ptr<RawSession>> holders;
  std::vector<uint64_t> ids;
  for (int i = 0; i < 2; ++i) {
    holders.push_back(std::make_unique<RawSession>(daemon_->address()));
    ASSERT_OK(holders[i]->Open(1 << 20).status());
    ASSERT_OK_AND_ASSIGN(uint64_t h, holders[i]->Allocate(kBig));
    // All eight chunks but not the end: the upload's data is held until it ends.
    ids.push_back(holders[i]->NextId());
    ASSERT_TRUE(holders[i]->Send(UploadStart(ids[i], h, kBig, 1 << 20)));
    for (int c = 1; c < 8; ++c) {
      v1::SessionRequest more;
      more.set_id(ids[i]);
      more.mutable_upload()->set_data(std::string(1 << 20, 'u'));
      ASSERT_TRUE(holders[i]->Send(more));
    }
  }
  ASSERT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return UploadHolds(i.transfer_bytes_in_use(), 2 * kBig) &&
           i.transfer_bytes_limit() == kBudget;
  })) << "both uploads hold the memory of the data they sent";
  auto d = Connect("latecomer");
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(3 << 20));
  // Uploads and reads of more than a few bytes need transfer memory; too little is left (a
  // little over 2 MiB: the upload's first chunk and huge page need 3, the read its 3 MiB and
  // 512 bytes a reply).
  const std::vector<uint8_t> bytes = RandomBytes(3 << 20, 11);
  const absl::Status refused = d->Upload(r, bytes);
  EXPECT_THAT(refused, StatusIs(Code::kResourceExhausted));
  // Its own client's share is what has no room (one process: one client), and the refusal
  // names the flag that sets it.
  EXPECT_THAT(std::string(refused.message()), HasSubstr("(--client_transfer_bytes)"));
  EXPECT_THAT(d->DownloadRange(r, 0, 3 << 20), StatusIs(Code::kResourceExhausted));
  // A refused transfer changes nothing, and the session goes on.
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> first_word, d->DownloadRange(r, 0, 4));
  EXPECT_EQ(first_word, std::vector<uint8_t>(4, 0));
  // A request whose message is large (60000 ranges, about 660 KB, more parsed) holds it until
  // it runs: it needs transfer memory too, even though the bytes it reads are few, and without
  // it the message is refused before it is parsed.
  {
    RawSession raw(daemon_->address());
    ASSERT_OK(raw.Open(1 << 20).status());
    ASSERT_OK_AND_ASSIGN(uint64_t word, raw.Allocate(4));
    v1::SessionRequest many;
    many.set_id(raw.NextId());
    for (int i = 0; i < 60000; ++i) {
      v1::Range* range = many.mutable_read()->add_ranges();
      range->set_handle(word);
      range->set_length(i == 0 ? 4 : 0);
    }
    ASSERT_GT(many.ByteSizeLong(), 64u << 10);
    ASSERT_TRUE(raw.Send(many));
    ASSERT_OK_AND_ASSIGN(v1::SessionResponse reply, raw.Await(many.id()));
    EXPECT_EQ(reply.status().code(), static_cast<int>(Code::kResourceExhausted));
    EXPECT_THAT(reply.status().message(), HasSubstr("refused unparsed"));
  }

  // The holders end their uploads, which gives the memory back.
  for (int i = 0; i < 2; ++i) {
    v1::SessionRequest end;
    end.set_id(ids[i]);
    end.mutable_upload()->set_last(true);
    ASSERT_TRUE(holders[i]->Send(end));
    ASSERT_OK_AND_ASSIGN(v1::SessionResponse done, holders[i]->Await(ids[i]));
    EXPECT_EQ(done.status().code(), 0) << done.status().message();
  }
  ASSERT_OK(d->Upload(r, bytes));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> back, d->Download(r));
  EXPECT_EQ(back, bytes);
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.transfer_bytes_in_use() == 0;
  })) << "every transfer gave its memory back once done";
}

TEST_F(DaemonTest, AStalledUploadHoldsOnlyWhatItSentAndUploadsAfterARefusedOpenAreRefused) {
  daemon_.reset();
  StartDaemon({"--max_request_bytes=64M", "--max_transfer_bytes=128M", "--max_sessions=1",
               "--chunk_size=1M"});
  RawSession stalled(daemon_->address());
  ASSERT_OK(stalled.Open(1 << 20).status());
  ASSERT_OK_AND_ASSIGN(uint64_t h, stalled.Allocate(64 << 20));
  // Declares 64 MiB, sends 1 MiB, and stalls.
  ASSERT_TRUE(stalled.Send(UploadStart(stalled.NextId(), h, 64 << 20, 1 << 20)));
  ASSERT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return UploadHolds(i.transfer_bytes_in_use(), 1 << 20);
  })) << "only the megabyte that arrived is held";

  // The daemon is full: this stream's open is refused, and so is its upload (at its first
  // message, holding nothing of it).
  RawSession refused(daemon_->address());
  EXPECT_THAT(refused.Open().status(), StatusIs(Code::kResourceExhausted));
  const uint64_t id = refused.NextId();
  ASSERT_TRUE(refused.Send(UploadStart(id, 1, 32 << 20, 32 << 10)));
  v1::SessionRequest end;  // the reply comes when the upload ends
  end.set_id(id);
  end.mutable_upload()->set_last(true);
  ASSERT_TRUE(refused.Send(end));
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse reply, refused.Await(id));
  EXPECT_EQ(reply.status().code(), static_cast<int>(Code::kFailedPrecondition))
      << reply.status().message();
  // (The message the reply answers is given back once its handler returns, a moment after
  // the reply may have been read.)
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return UploadHolds(i.transfer_bytes_in_use(), 1 << 20);
  })) << "the refused upload holds nothing once answered";
  // A stream without a session holds one small message at a time: a larger one ends it.
  ASSERT_TRUE(refused.Send(UploadStart(refused.NextId(), 1, 32 << 20, 1 << 20)));
  const grpc::Status ended = refused.AwaitEnd();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(ended.error_message(), HasSubstr("before the stream's session is open"));
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return UploadHolds(i.transfer_bytes_in_use(), 1 << 20);
  })) << "the ended stream holds nothing";
  stalled.Cancel();
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.transfer_bytes_in_use() == 0 && i.active_sessions() == 0;
  })) << "a cancelled stream gives back what its unfinished upload held";
}

TEST_F(DaemonTest, ABufferLargerThanOneRequestDownloadsInPiecesAndUploadsByRanges) {
  daemon_.reset();
  StartDaemon({"--max_request_bytes=64K"});
  auto d = Connect("big");
  constexpr size_t kBytes = (1 << 20) + 12;  // not a multiple of the request limit
  const std::vector<uint8_t> bytes = RandomBytes(kBytes, 5);
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(kBytes));
  EXPECT_THAT(d->Upload(r, bytes), StatusIs(Code::kResourceExhausted))
      << "one upload is one request: all or nothing";
  for (size_t at = 0; at < kBytes; at += 64 << 10) {
    const size_t n = std::min<size_t>(64 << 10, kBytes - at);
    const RangedUpload piece{r, at, absl::MakeConstSpan(bytes).subspan(at, n)};
    ASSERT_OK(d->UploadAtMany({&piece, 1}));
  }
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> back, d->Download(r));
  EXPECT_EQ(back, bytes);
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> middle, d->DownloadRange(r, 100, kBytes - 200));
  EXPECT_EQ(middle, std::vector<uint8_t>(bytes.begin() + 100, bytes.end() - 100));
  EXPECT_THAT(d->DownloadRange(r, 100, kBytes), StatusIs(Code::kOutOfRange));
  // One range past the limit goes in pieces through DownloadRangesInto too; several ranges in
  // one call are one request, refused past the limit in all, and so are a sequence's reads,
  // after their handles and ranges are checked.
  std::vector<uint8_t> first, second;
  std::vector<std::vector<uint8_t>*> one = {&first};
  const std::vector<ReadRange> long_read = {{r, 10, kBytes - 10}};
  ASSERT_OK(d->DownloadRangesInto(long_read, absl::MakeSpan(one)));
  EXPECT_EQ(first, std::vector<uint8_t>(bytes.begin() + 10, bytes.end()));
  // In pieces straight into the caller's memory, and nothing written past it.
  std::vector<uint8_t> memory(kBytes + 16, 0xEE);
  ASSERT_OK(d->DownloadRangeIntoSpan(r, 10, absl::MakeSpan(memory).subspan(8, kBytes - 10)));
  EXPECT_TRUE(std::equal(bytes.begin() + 10, bytes.end(), memory.begin() + 8));
  EXPECT_TRUE(std::all_of(memory.begin(), memory.begin() + 8, [](uint8_t b) { return b == 0xEE; }));
  EXPECT_TRUE(std::all_of(memory.end() - 18, memory.end(), [](uint8_t b) { return b == 0xEE; }));
  std::vector<std::vector<uint8_t>*> two = {&first, &second};
  const std::vector<ReadRange> reads = {{r, 0, 40 << 10}, {r, 40 << 10, 40 << 10}};
  EXPECT_THAT(d->DownloadRangesInto(reads, absl::MakeSpan(two)),
              StatusIs(Code::kResourceExhausted));
  const std::vector<ReadRange> past_end = {{r, 0, 40 << 10}, {r, 1, kBytes}};
  EXPECT_THAT(d->DownloadRangesInto(past_end, absl::MakeSpan(two)), StatusIs(Code::kOutOfRange))
      << "the same code as in-process";
}

// Uploads `bytes` into `handle` from offset 0, in messages of `chunk` bytes.
void UploadInChunks(RawSession& raw, uint64_t handle, const std::vector<uint8_t>& bytes,
                    size_t chunk) {
  const uint64_t id = raw.NextId();
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    v1::SessionRequest message;
    message.set_id(id);
    if (at == 0) {
      v1::Range& range = *message.mutable_upload()->add_ranges();
      range.set_handle(handle);
      range.set_length(bytes.size());
    }
    const size_t n = std::min(chunk, bytes.size() - at);
    message.mutable_upload()->set_data(reinterpret_cast<const char*>(bytes.data()) + at, n);
    message.mutable_upload()->set_last(at + n == bytes.size());
    ASSERT_TRUE(raw.Send(message));
  }
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse done, raw.Await(id));
  ASSERT_EQ(done.status().code(), 0) << done.status().message();
}

TEST_F(DaemonTest, ALargeReadStreamsItsChunksInOrderHoldingTwoWindowsAtMost) {
  daemon_.reset();
  StartDaemon({"--max_request_bytes=256M", "--max_transfer_bytes=1G", "--chunk_size=1M"});
  RawSession raw(daemon_->address());
  ASSERT_OK(raw.Open(1 << 20).status());
  constexpr uint64_t kBytes = (uint64_t{40} << 20) + 3;
  const std::vector<uint8_t> bytes = RandomBytes(kBytes, 17);
  ASSERT_OK_AND_ASSIGN(uint64_t h, raw.Allocate(kBytes));
  UploadInChunks(raw, h, bytes, 1 << 20);

  // Ranges that cross chunks and windows (8 MiB), with empty ones between them; a ping sent
  // behind the read is answered after its last chunk.
  const std::vector<std::pair<uint64_t, uint64_t>> pieces = {
      {5, (uint64_t{17} << 20) + 1}, {0, 0}, {kBytes - 1, 1}, {kBytes, 0},
      {1000, (uint64_t{20} << 20) - 7}, {kBytes - 2, 2}};
  v1::SessionRequest read;
  read.set_id(raw.NextId());
  std::string expected;
  for (const auto& [offset, length] : pieces) {
    v1::Range& range = *read.mutable_read()->add_ranges();
    range.set_handle(h);
    range.set_offset(offset);
    range.set_length(length);
    expected.append(reinterpret_cast<const char*>(bytes.data()) + offset, length);
  }
  v1::SessionRequest ping;
  ping.set_id(raw.NextId());
  ping.mutable_ping()->set_payload("after");
  ASSERT_TRUE(raw.Send(read));
  ASSERT_TRUE(raw.Send(ping));
  std::string got;
  v1::SessionResponse response;
  int chunks = 0;
  while (raw.Next(&response) && response.id() == read.id()) {
    ASSERT_TRUE(response.has_data());
    EXPECT_EQ(response.data().offset(), got.size());
    EXPECT_EQ(response.data().total(), expected.size());
    EXPECT_LE(response.data().data().size(), uint64_t{1} << 20);
    got += response.data().data();
    ++chunks;
    if (response.last()) {
      EXPECT_EQ(response.status().code(), 0) << response.status().message();
      break;
    }
  }
  EXPECT_TRUE(response.last() && response.id() == read.id()) << "the read's chunks come first";
  EXPECT_EQ(chunks, static_cast<int>((expected.size() + (1 << 20) - 1) >> 20));
  EXPECT_TRUE(got == expected) << "the streamed bytes differ";
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse pong, raw.Await(ping.id()));
  EXPECT_EQ(pong.ping().payload(), "after");

  // A bad range anywhere is refused before any chunk is sent, with its own code and index.
  read.set_id(raw.NextId());
  read.mutable_read()->mutable_ranges(5)->set_length(3);
  ASSERT_TRUE(raw.Send(read));
  ASSERT_TRUE(raw.Next(&response));
  EXPECT_TRUE(response.last() && !response.has_data());
  EXPECT_EQ(response.status().code(), static_cast<int>(Code::kOutOfRange));
  EXPECT_THAT(response.status().message(), HasSubstr("read 5"));

  // A client that reads no reply: the daemon holds two windows of its read's replies, not all
  // of them, and gives them back when the stream goes.
  RawSession idle(daemon_->address());
  ASSERT_OK(idle.Open(1 << 20).status());
  ASSERT_OK_AND_ASSIGN(uint64_t big, idle.Allocate(uint64_t{200} << 20));
  v1::SessionRequest unread;
  unread.set_id(idle.NextId());
  v1::Range& all = *unread.mutable_read()->add_ranges();
  all.set_handle(big);
  all.set_length(uint64_t{200} << 20);
  ASSERT_TRUE(idle.Send(unread));
  ASSERT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.transfer_bytes_in_use() == (uint64_t{16} << 20) + 16 * kReplyOverheadBytes;
  })) << "a read that streams reserves two 8 MiB windows of replies of 1 MiB";
  idle.Cancel();
  EXPECT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.transfer_bytes_in_use() == 0 && i.active_sessions() == 1;
  })) << "a cancelled stream gives back what its read held";
}

TEST_F(DaemonTest, GarbageAndOversizedMessagesEndOnlyTheirOwnStream) {
  auto bystander = Connect("bystander");
  ASSERT_OK_AND_ASSIGN(Resource kept, bystander->Allocate(8));
  ASSERT_OK(bystander->Upload(kept, std::vector<uint8_t>(8, 9)));

  // Bytes that are not a SessionRequest, sent through a generic stub.
  auto channel = grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::CompletionQueue cq;
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      generic.PrepareCall(&context, "/sluice.v1.Sluice/Session", &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  const std::string garbage = "\xff\xff\xff\xff\x0f this is not a protobuf message";
  grpc::Slice slice(garbage);
  grpc::ByteBuffer buffer(&slice, 1);
  call->Write(buffer, reinterpret_cast<void*>(2));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  call->WritesDone(reinterpret_cast<void*>(3));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(4));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }

  // A message above the daemon's size limit.
  RawSession raw(daemon_->address());
  ASSERT_OK(raw.Open().status());
  v1::SessionRequest huge;
  huge.mutable_ping()->set_payload(std::string(20 << 20, 'h'));
  huge.set_id(raw.NextId());
  raw.Send(huge);
  EXPECT_THAT(raw.Await(huge.id()), StatusIs(Code::kUnavailable));
  EXPECT_EQ(raw.Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> still, bystander->Download(kept));
  EXPECT_EQ(still, std::vector<uint8_t>(8, 9));
  EXPECT_OK(bystander->Ping());
}

TEST_F(DaemonTest, GetInfoDescribesTheBackendLimitsAndCatalog) {
  auto d = Connect();
  const v1::GetInfoResponse info = Info();
  EXPECT_EQ(info.backend(), "cpu");
  ASSERT_EQ(info.devices_size(), 1);
  EXPECT_EQ(info.devices(0).id(), d->backend_id());
  EXPECT_EQ(info.devices(0).version(), d->backend_version());
  EXPECT_EQ(info.devices(0).memory().total(), uint64_t{4} << 30);
  EXPECT_EQ(info.active_sessions(), 1u);
  // Limits a client in any language needs before it opens: sessions, chunk bounds, defaults.
  EXPECT_EQ(info.max_sessions(), SessionManager::Options{}.max_sessions);
  EXPECT_EQ(info.min_chunk_size(), kMinChunkSize);
  EXPECT_EQ(info.max_chunk_size(), SessionManager::Options{}.max_chunk_size);
  EXPECT_EQ(info.default_limits().chunk_size(), SessionLimits{}.chunk_size);
  EXPECT_EQ(info.default_limits().max_steps(), SessionLimits{}.max_steps);
  // What one stream may make the daemon hold, and gRPC's own quota (a sixteenth of the host's
  // memory within [256M, 1G] by default).
  EXPECT_EQ(info.max_queued_requests(), 16u);
  EXPECT_EQ(info.max_queued_bytes(), uint64_t{64} << 20);
  EXPECT_EQ(info.max_unsent_reply_bytes(), uint64_t{64} << 20);
  EXPECT_EQ(info.grpc_memory(), std::clamp<uint64_t>(info.host_memory().host() / 16,
                                                      uint64_t{256} << 20, uint64_t{1} << 30));
  EXPECT_EQ(info.host_memory().grpc(), info.grpc_memory());
  EXPECT_EQ(info.catalog_fingerprint(), KernelCatalog::Builtin().fingerprint());
  ASSERT_EQ(info.kernels_size(), static_cast<int>(KernelCatalog::Builtin().kernels().size()));
  int seen = 0;
  for (const v1::KernelInfo& k : info.kernels()) {
    if (k.name() == "bfs_expand") {
      ++seen;
      EXPECT_EQ(k.bindings_size(), 7);
      EXPECT_FALSE(k.accepts_grid_override());
      EXPECT_FALSE(k.loop_guard());
    }
    if (k.name() == "repeat_while_u32") {
      ++seen;
      EXPECT_TRUE(k.loop_guard());
    }
    if (k.name() == "exclusive_scan_u32") {
      ++seen;
      EXPECT_THAT(k.may_alias(), ::testing::ElementsAre(0, 1));  // in and out
    }
    if (k.name() == "sort_u64") {
      // What scratch needs, as a formula a client in any language can evaluate.
      ++seen;
      ASSERT_EQ(k.bindings_size(), 3);
      ASSERT_EQ(k.bindings(2).size_rules_size(), 1);
      const v1::SizeRule& rule = k.bindings(2).size_rules(0);
      EXPECT_THAT(rule.params(), ::testing::ElementsAre(0));  // count
      EXPECT_TRUE(rule.bindings().empty());
      EXPECT_EQ(rule.add(), 0);
      EXPECT_EQ(rule.divide(), 2048u);
      EXPECT_EQ(rule.multiply(), 256u);
      EXPECT_EQ(rule.text(), "256 * ceil(count / 2048)");
    }
  }
  EXPECT_EQ(seen, 4);
}

TEST_F(DaemonTest, SessionCountAndMemoryQuotaAreEnforcedPerSession) {
  daemon_.reset();
  StartDaemon({"--max_sessions=2", "--max_sessions_per_client=2", "--session_memory=1M",
               "--client_memory=2M"});
  auto a = Connect("a");
  auto b = Connect("b");
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> c =
      RemoteDispatch::Connect({.target = daemon_->address()});
  EXPECT_THAT(c, StatusIs(Code::kResourceExhausted));
  ASSERT_OK(a->Allocate(1 << 19).status());
  EXPECT_THAT(a->Allocate((1 << 19) + 1), StatusIs(Code::kResourceExhausted));
  EXPECT_OK(b->Allocate(1 << 20).status()) << "quotas are per session";
}

// --max_buffers as the open reply publishes it and as the daemon enforces it, on a raw stream
// (RemoteDispatch refuses one more on its own before asking): per session, and a freed
// buffer's place taken again.
TEST_F(DaemonTest, MaxBuffersIsPublishedAndTheDaemonRefusesOneMorePerSession) {
  daemon_.reset();
  StartDaemon({"--max_buffers=3"});
  RawSession raw(daemon_->address());
  ASSERT_OK_AND_ASSIGN(v1::OpenResponse open, raw.Open());
  EXPECT_EQ(open.limits().max_buffers(), 3u);
  std::vector<uint64_t> held;
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(uint64_t handle, raw.Allocate(16));
    held.push_back(handle);
  }
  EXPECT_THAT(raw.Allocate(16),
              StatusIs(Code::kResourceExhausted, HasSubstr("most buffers allowed (3)")));
  auto other = Connect("other");
  EXPECT_EQ(other->limits().max_buffers, 3u);
  for (int i = 0; i < 3; ++i) EXPECT_OK(other->Allocate(16).status()) << "per session";
  EXPECT_THAT(other->Allocate(16), StatusIs(Code::kResourceExhausted));
  v1::SessionRequest free;
  free.mutable_free()->set_handle(held[0]);
  ASSERT_OK(raw.Call(free, raw.NextId()));
  EXPECT_OK(raw.Allocate(16).status()) << "a freed buffer's place";
  EXPECT_THAT(raw.Allocate(16), StatusIs(Code::kResourceExhausted));
}

TEST_F(DaemonTest, HealthAndReflectionAreServed) {
  auto channel = grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials());
  grpc::GenericStub generic(channel);
  // grpc.health.v1.Health/Check for the whole server (an empty request) and for the Sluice
  // service by name (field 1, the service): SERVING is field 1 = 1 (bytes 08 01).
  for (const std::string service : {"", "sluice.v1.Sluice"}) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    std::string encoded;
    if (!service.empty()) {
      encoded.push_back('\x0a');
      encoded.push_back(static_cast<char>(service.size()));
      encoded += service;
    }
    grpc::Slice slice(encoded);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    absl::Notification done;
    grpc::Status status;
    generic.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                      &response, [&](grpc::Status s) {
                        status = s;
                        done.Notify();
                      });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    ASSERT_TRUE(status.ok()) << "service '" << service << "': " << status.error_message();
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(response.Dump(&slices).ok());
    std::string bytes;
    for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    EXPECT_EQ(bytes, std::string("\x08\x01", 2)) << "service '" << service << "'";
  }
  // grpc.reflection.v1alpha.ServerReflection: list_services (field 7) names sluice.v1.Sluice.
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::CompletionQueue cq;
    auto call = generic.PrepareCall(&context,
                                    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                    &cq);
    void* tag;
    bool ok;
    call->StartCall(reinterpret_cast<void*>(1));
    ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
    const std::string list_services("\x3a\x00", 2);
    grpc::Slice slice(list_services);
    grpc::ByteBuffer request(&slice, 1);
    call->Write(request, reinterpret_cast<void*>(2));
    ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
    grpc::ByteBuffer response;
    call->Read(&response, reinterpret_cast<void*>(3));
    ASSERT_TRUE(cq.Next(&tag, &ok) && ok);
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(response.Dump(&slices).ok());
    std::string bytes;
    for (const grpc::Slice& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    EXPECT_THAT(bytes, HasSubstr("sluice.v1.Sluice"));
    context.TryCancel();
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(4));
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  }
}

TEST_F(DaemonTest, ACancelRequestStopsARunningAndAQueuedRequestAndTheSessionGoesOn) {
  RawSession raw(daemon_->address());
  ASSERT_OK(raw.Open().status());
  ASSERT_OK_AND_ASSIGN(uint64_t h, raw.Allocate(4));
  std::vector<v1::SessionRequest> requests(6);
  // E: four billion iterations (hours); Q: a read queued behind it; C1, C2: cancel Q and E;
  // C3: cancel a request that never was; P: a ping.
  const uint64_t e = raw.NextId(), q = raw.NextId(), c1 = raw.NextId(), c2 = raw.NextId(),
                 c3 = raw.NextId(), p = raw.NextId();
  v1::Step& step = *requests[0].mutable_execute()->add_repeated();
  step.set_kernel("atomic_add_u32");
  step.add_params(0);
  step.add_params(1);
  step.add_handles(h);
  requests[0].mutable_execute()->set_repeat_count(4000000000u);
  v1::Range& range = *requests[1].mutable_read()->add_ranges();
  range.set_handle(h);
  range.set_length(4);
  requests[2].mutable_cancel()->set_target(q);
  requests[3].mutable_cancel()->set_target(e);
  requests[4].mutable_cancel()->set_target(424242);
  requests[5].mutable_ping();
  const uint64_t ids[] = {e, q, c1, c2, c3, p};
  for (int i = 0; i < 6; ++i) {
    requests[i].set_id(ids[i]);
    ASSERT_TRUE(raw.Send(requests[i]));
  }
  std::vector<v1::SessionResponse> before;
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse pong, raw.Await(p, nullptr, &before));
  EXPECT_EQ(pong.status().code(), 0);
  ASSERT_EQ(before.size(), 5u);
  const int kCancelled = static_cast<int>(Code::kCancelled);
  EXPECT_EQ(before[0].id(), e);
  EXPECT_EQ(before[0].status().code(), kCancelled) << before[0].status().message();
  EXPECT_EQ(before[1].id(), q);
  EXPECT_EQ(before[1].status().code(), kCancelled);
  EXPECT_THAT(before[1].status().message(), HasSubstr("before it ran"));
  EXPECT_EQ(before[2].status().code(), 0);
  EXPECT_EQ(before[3].status().code(), 0);
  EXPECT_EQ(before[4].id(), c3);
  EXPECT_EQ(before[4].status().code(), static_cast<int>(Code::kNotFound));
  // What E did stays; the session goes on.
  ASSERT_OK_AND_ASSIGN(std::string word, raw.Read(h, 0, 4));
  EXPECT_EQ(word.size(), 4u);
}

TEST_F(DaemonTest, ARequestPastItsTimeLimitStopsAndTheSessionGoesOn) {
  daemon_.reset();
  StartDaemon({"--max_request_seconds=1"});
  auto d = Connect();
  EXPECT_EQ(d->limits().max_request_seconds, 1u);
  ASSERT_OK_AND_ASSIGN(Resource counter, d->Allocate(4));
  const Program add{"atomic_add_u32", {0, 1}};
  const Step step{&add, {&counter, 1}, std::nullopt};
  const absl::Time started = absl::Now();
  EXPECT_THAT(d->DispatchRepeatedSequenceReadRangesInto({}, {&step, 1}, 4000000000u, {}, {}),
              StatusIs(Code::kDeadlineExceeded, HasSubstr("--max_request_seconds")));
  EXPECT_LT(absl::Now() - started, absl::Seconds(30));
  EXPECT_OK(d->Ping());
  // A group of a loop guard alone, its word never zero, runs nothing past its first iteration:
  // well within the limit (4,000,000,000 empty iterations took about a minute).
  const Program guard{"repeat_while_u32", {0}};
  const Step alone{&guard, {&counter, 1}, std::nullopt};
  EXPECT_OK(d->DispatchRepeatedSequenceReadRangesInto({}, {&alone, 1}, 4000000000u, {}, {}));
}

// A hostile client's kernel whose data keeps each thread looping (a BFS step from a frontier
// that names 65,536 times a node with 16M edges to itself: 10^12 steps, where the CPU device
// looks for a stop between threads) holds the device for its request's time limit, and no
// longer: the other sessions are served meanwhile, and their work runs once it has stopped.
TEST_F(DaemonTest, AKernelWhoseDataKeepsItsThreadsLoopingStopsAtTheTimeLimitForEveryone) {
  daemon_.reset();
  StartDaemon({"--max_request_seconds=1"});
  auto hostile = Connect("hostile");
  auto other = Connect("other");
  constexpr uint32_t kEdges = uint32_t{16} << 20, kThreads = 65536;
  const std::vector<std::vector<uint32_t>> contents = {
      {0, kEdges},                              // row_offsets: node 0's edges
      std::vector<uint32_t>(kEdges, 0),         // columns: all to node 0
      {1},                                      // visited: node 0
      {0},                                      // levels
      std::vector<uint32_t>(kThreads, 0),       // frontier: node 0, again and again
      {0},                                      // next
      {kThreads, 0, 0, 0}};                     // state: the frontier's count
  std::vector<Resource> bindings;
  for (const std::vector<uint32_t>& words : contents) {
    ASSERT_OK_AND_ASSIGN(Resource r, hostile->Allocate(4 * words.size()));
    ASSERT_OK(hostile->Upload(
        r, {reinterpret_cast<const uint8_t*>(words.data()), 4 * words.size()}));
    bindings.push_back(r);
  }
  ASSERT_OK_AND_ASSIGN(Resource counter, other->Allocate(4));
  const absl::Time started = absl::Now();
  {
    // The other session is served meanwhile (what needs no device).
    absl::Notification sent;
    absl::Status pinged;
    std::thread beside([&] {
      sent.WaitForNotification();
      pinged = other->Ping();
    });
    sent.Notify();
    EXPECT_THAT(hostile->Dispatch(Program{"bfs_expand", {}}, bindings, std::nullopt),
                StatusIs(Code::kDeadlineExceeded, HasSubstr("--max_request_seconds")));
    beside.join();
    EXPECT_OK(pinged);
  }
  EXPECT_LT(absl::Now() - started, absl::Seconds(30));
  // The device is free again: the other session's kernel runs.
  const Program add{"atomic_add_u32", {0, 1}};
  EXPECT_OK(other->Dispatch(add, {&counter, 1}, std::nullopt));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> word, other->DownloadRange(counter, 0, 4));
  EXPECT_EQ(word, (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_OK(hostile->Ping());
}

// limits.max_message_bytes, as the open reply publishes it, is the largest message the daemon
// reads: one of exactly that many bytes is read (and answered), one byte more ends the stream
// with RESOURCE_EXHAUSTED.
TEST_F(DaemonTest, AMessageOfMaxMessageBytesIsReadAndOneByteMoreEndsTheStream) {
  // A ping of `bytes` bytes on the wire, its payload grown to make it so.
  const auto ping_of = [](uint64_t bytes, uint64_t id) {
    v1::SessionRequest ping;
    ping.set_id(id);
    uint64_t payload = bytes;
    for (int tries = 0; tries < 4; ++tries) {
      ping.mutable_ping()->set_payload(std::string(payload, 'p'));
      payload = payload + bytes - ping.ByteSizeLong();
    }
    EXPECT_EQ(ping.ByteSizeLong(), bytes);
    return ping;
  };
  RawSession fits(daemon_->address());
  ASSERT_OK_AND_ASSIGN(v1::OpenResponse open, fits.Open());
  const uint64_t most = open.limits().max_message_bytes();
  ASSERT_GT(most, uint64_t{1} << 20);
  const uint64_t id = fits.NextId();
  ASSERT_TRUE(fits.Send(ping_of(most, id)));
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse answer, fits.Await(id));
  EXPECT_EQ(answer.status().code(), static_cast<int>(Code::kInvalidArgument))
      << "read, and refused as a ping: " << answer.status().message();
  EXPECT_OK(fits.Ping());
  RawSession past(daemon_->address());
  ASSERT_OK(past.Open().status());
  past.Send(ping_of(most + 1, past.NextId()));
  EXPECT_EQ(past.AwaitEnd().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(DaemonTest, SigtermDrainsCancelsLongWorkFreesEverythingAndExitsZero) {
  daemon_.reset();
  StartDaemon({"--drain_timeout=1s"});
  auto idle = Connect("idle");
  ASSERT_OK(idle->Allocate(1 << 20).status());
  auto busy = Connect("busy");
  ASSERT_OK_AND_ASSIGN(Resource counter, busy->Allocate(4));
  const Program add{"atomic_add_u32", {0, 1}};
  const Step step{&add, {&counter, 1}, std::nullopt};
  absl::Status status;
  std::thread caller([&] {
    status = busy->DispatchRepeatedSequenceReadRangesInto({}, {&step, 1}, 4000000000u, {}, {});
  });
  ASSERT_TRUE(WaitForInfo([](const v1::GetInfoResponse& i) {
    return i.devices(0).counters().launches() > 1000;
  }));
  ASSERT_OK_AND_ASSIGN(int exit_status,
                       daemon_->process().SignalAndWait(SIGTERM, absl::Seconds(60)));
  caller.join();
  EXPECT_TRUE(WIFEXITED(exit_status));
  EXPECT_EQ(WEXITSTATUS(exit_status), 0) << daemon_->process().Stderr();
  // Both sessions were told, and ended saying why.
  EXPECT_THAT(status, StatusIs(Code::kUnavailable, HasSubstr("grace period of 1s ended")));
  EXPECT_THAT(idle->Allocate(4), StatusIs(Code::kUnavailable, HasSubstr("sluiced is shutting down")));
  EXPECT_TRUE(idle->draining_until().has_value());
  EXPECT_TRUE(busy->draining_until().has_value());
  const std::string log = daemon_->process().Stderr();
  EXPECT_THAT(log, HasSubstr("opened by \"busy\""));
  EXPECT_THAT(log, HasSubstr("closed (ended by the daemon)"));
  EXPECT_THAT(log, HasSubstr("0 bytes of buffers still allocated"));
}

}  // namespace
}  // namespace sluice::testing
