// The same-host data path against the real sluiced on a Unix socket: uploads and reads through
// memory shared with the daemon, agreeing byte for byte with the stream's; a client that cannot
// have it (TCP, a daemon without it, one that did not ask) takes the stream; and what a hostile
// client on the host can send the side socket (no memfd, an unsealed one, a wrong token, too
// much memory, nothing at all) gets a specific refusal and harms no one.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/unix_socket.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/client/server_info.h"
#include "sluice/proto/contract.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/raw_session.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/wait.h"

namespace sluice::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

// A sealed memfd of `bytes` (as a client must make it), or unsealed.
int MakeMemfd(uint64_t bytes, bool sealed) {
  const int fd = memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
  if (sealed) {
    EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  }
  return fd;
}

// Sends `payload` with `fd` (none if negative) to the socket at `path`; the daemon's answer.
std::string Attach(const std::string& path, const std::string& payload, int fd) {
  absl::StatusOr<int> socket = ConnectUnixSocket(path, absl::Seconds(10));
  if (!socket.ok()) return socket.status().ToString();
  std::string answer;
  if (SendWithDescriptor(*socket, payload, fd).ok()) {
    char buffer[512];
    ssize_t n;
    while ((n = recv(*socket, buffer, sizeof(buffer), 0)) > 0) answer.append(buffer, n);
  }
  close(*socket);
  return answer;
}

class SharedMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/sluice-shm-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    address_ = "unix://" + dir_ + "/sluiced.sock";
  }
  void TearDown() override {
    daemon_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);  // the socket files are left behind
  }
  void Start(std::vector<std::string> flags = {}) {
    flags.insert(flags.begin(), {"--backend=cpu", "--listen=" + address_});
    ASSERT_OK_AND_ASSIGN(daemon_, DaemonProcess::Start(flags));
  }
  std::unique_ptr<RemoteDispatch> Connect(const std::string& target, bool shared = true) {
    absl::StatusOr<std::unique_ptr<RemoteDispatch>> d = RemoteDispatch::Connect(
        {.target = target, .client_name = "shm", .shared_memory = shared});
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? std::move(*d) : nullptr;
  }
  // A raw session whose open asked for shared memory; its offer.
  v1::SharedMemoryOffer RawOpen(RawSession& raw) {
    v1::SessionRequest open;
    open.mutable_open()->set_client_name("raw-shm");
    open.mutable_open()->set_shared_memory(true);
    v1::SessionResponse reply;
    EXPECT_OK(raw.Call(open, raw.NextId(), &reply));
    return reply.open().shared_memory();
  }

  std::string dir_, address_;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(SharedMemoryTest, UploadsAndReadsSkipTheStreamAndAgreeWithIt) {
  Start();
  auto d = Connect(address_);
  ASSERT_TRUE(d->shared_memory()) << "a daemon on a Unix socket offers it";
  constexpr size_t kBytes = (size_t{48} << 20) + 5;
  const std::vector<uint8_t> bytes = RandomBytes(kBytes, 3);
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(kBytes));
  RemoteDispatch::Counters before = d->counters();
  ASSERT_OK(d->Upload(r, bytes));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> back, d->Download(r));
  RemoteDispatch::Counters after = d->counters();
  EXPECT_TRUE(back == bytes);
  EXPECT_EQ(after.shared_bytes - before.shared_bytes, 2 * kBytes);
  EXPECT_LT(after.bytes_sent - before.bytes_sent, 4096u) << "no data on the stream";
  EXPECT_LT(after.bytes_received - before.bytes_received, 4096u);
  // Each way in pieces, a round trip each, overlapped.
  const uint64_t pieces =
      (kBytes + RemoteDispatch::kSharedPieceBytes - 1) / RemoteDispatch::kSharedPieceBytes;
  const uint64_t read_pieces = (kBytes + RemoteDispatch::kSharedReadPieceBytes - 1) /
                               RemoteDispatch::kSharedReadPieceBytes;
  EXPECT_EQ(after.round_trips - before.round_trips, pieces + read_pieces);

  // Several ranges each way, empty ones among them; small ones take the stream.
  const std::vector<uint8_t> patch = RandomBytes(size_t{3} << 20, 4);
  const std::vector<RangedUpload> uploads = {{r, 7, patch}, {r, 100, {}},
                                             {r, kBytes - (1 << 20), absl::MakeConstSpan(patch).first(1 << 20)}};
  ASSERT_OK(d->UploadAtMany(uploads));
  std::vector<uint8_t> expected = bytes;
  std::copy(patch.begin(), patch.end(), expected.begin() + 7);
  std::copy(patch.begin(), patch.begin() + (1 << 20), expected.end() - (1 << 20));
  std::vector<uint8_t> a, b, c;
  std::vector<std::vector<uint8_t>*> outs = {&a, &b, &c};
  const std::vector<ReadRange> reads = {{r, 0, size_t{2} << 20}, {r, 9, 0}, {r, kBytes - 3, 3}};
  ASSERT_OK(d->DownloadRangesInto(reads, absl::MakeSpan(outs)));
  EXPECT_TRUE(a == std::vector<uint8_t>(expected.begin(), expected.begin() + (2 << 20)));
  EXPECT_TRUE(b.empty());
  EXPECT_TRUE(c == std::vector<uint8_t>(expected.end() - 3, expected.end()));
  // Into the caller's memory: copied once, out of the shared memory.
  std::vector<uint8_t> memory((size_t{2} << 20) + 2, 0xEE);
  const RemoteDispatch::Counters before_span = d->counters();
  ASSERT_OK(d->DownloadRangeIntoSpan(r, 0, absl::MakeSpan(memory).subspan(1, size_t{2} << 20)));
  EXPECT_EQ(d->counters().shared_bytes - before_span.shared_bytes, size_t{2} << 20);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), memory.begin() + 1));
  EXPECT_EQ(memory.front(), 0xEE);
  EXPECT_EQ(memory.back(), 0xEE);
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> small, d->DownloadRange(r, 5, 100));
  EXPECT_TRUE(small == std::vector<uint8_t>(expected.begin() + 5, expected.begin() + 105));
  // Errors are the stream's, with the same codes.
  EXPECT_THAT(d->DownloadRange(r, 1, kBytes), StatusIs(Code::kOutOfRange));
  std::vector<std::vector<uint8_t>*> two = {&a, &b};
  const std::vector<ReadRange> second_bad = {{r, 0, size_t{40} << 20}, {r, 1, kBytes}};
  EXPECT_THAT(d->DownloadRangesInto(second_bad, absl::MakeSpan(two)),
              StatusIs(Code::kOutOfRange, HasSubstr("read 1")))
      << "the daemon names the caller's range";
  EXPECT_THAT(d->Upload(r, RandomBytes(kBytes + 1, 5)), StatusIs(Code::kOutOfRange));

  // An upload of the staging area copies nothing, and other transfers leave it alone.
  ASSERT_OK_AND_ASSIGN(absl::Span<uint8_t> staging, d->StagingArea(size_t{4} << 20));
  const std::vector<uint8_t> staged = RandomBytes(staging.size(), 6);
  std::copy(staged.begin(), staged.end(), staging.begin());
  ASSERT_OK(d->UploadAtMany({{r, 0, staging}}));
  ASSERT_OK(d->UploadAtMany({{r, size_t{8} << 20, patch}}));  // copied in past the staging
  ASSERT_OK(d->UploadAtMany({{r, size_t{16} << 20, staging}}));
  EXPECT_TRUE(std::equal(staged.begin(), staged.end(), staging.begin()));
  ASSERT_OK_AND_ASSIGN(back, d->Download(r));
  EXPECT_TRUE(std::equal(staged.begin(), staged.end(), back.begin()));
  EXPECT_TRUE(std::equal(patch.begin(), patch.end(), back.begin() + (8 << 20)));
  EXPECT_TRUE(std::equal(staged.begin(), staged.end(), back.begin() + (16 << 20)));

  // A client that does not ask, on the same daemon, takes the stream and sees the same bytes.
  auto plain = Connect(address_, /*shared=*/false);
  EXPECT_FALSE(plain->shared_memory());
  EXPECT_THAT(plain->StagingArea(1), StatusIs(Code::kFailedPrecondition));
}

// A read longer than a slot of the ring comes back in pieces that start and end anywhere in its
// ranges: every range lands whole in its own memory, empty ones and ones inside a piece too,
// as the stream brings them.
TEST_F(SharedMemoryTest, AReadThroughTheRingLandsEveryRangeWhereverItsPiecesEnd) {
  Start();
  auto d = Connect(address_);
  auto plain = Connect(address_, /*shared=*/false);
  ASSERT_TRUE(d->shared_memory());
  constexpr uint64_t kPiece = RemoteDispatch::kSharedReadPieceBytes;
  constexpr size_t kBytes = 4 * kPiece + 77;
  const std::vector<uint8_t> bytes = RandomBytes(kBytes, 11);
  ASSERT_OK_AND_ASSIGN(Resource a, d->Allocate(kBytes));
  ASSERT_OK_AND_ASSIGN(Resource b, d->Allocate(kBytes));
  ASSERT_OK_AND_ASSIGN(Resource pa, plain->Allocate(kBytes));
  ASSERT_OK_AND_ASSIGN(Resource pb, plain->Allocate(kBytes));
  ASSERT_OK(d->Upload(a, bytes));
  ASSERT_OK(plain->Upload(pa, bytes));
  std::vector<uint8_t> reversed(bytes.rbegin(), bytes.rend());
  ASSERT_OK(d->Upload(b, reversed));
  ASSERT_OK(plain->Upload(pb, reversed));
  // Lengths around the piece's: empty first and last, one inside a piece, one across three.
  struct Part {
    bool second;
    uint64_t offset, length;
  };
  const std::vector<Part> parts = {{false, 0, 0},          {false, 3, kPiece - 5},
                                   {true, 1, 9},           {false, 0, 0},
                                   {true, 100, 2 * kPiece + 1}, {false, kBytes - kPiece, kPiece},
                                   {true, kBytes - 1, 1},  {true, 5, 0}};
  uint64_t total = 0;
  std::vector<ReadRange> shared_reads, plain_reads;
  for (const Part& p : parts) {
    shared_reads.push_back({p.second ? b : a, p.offset, p.length});
    plain_reads.push_back({p.second ? pb : pa, p.offset, p.length});
    total += p.length;
  }
  ASSERT_GT(total, 3 * kPiece) << "more pieces than the ring has slots";
  // Filled beforehand: an empty range's output is emptied only if its target is asked.
  std::vector<std::vector<uint8_t>> got(parts.size(), std::vector<uint8_t>(3, 0xab));
  std::vector<std::vector<uint8_t>> want(parts.size());
  std::vector<std::vector<uint8_t>*> got_out, want_out;
  for (size_t i = 0; i < parts.size(); ++i) {
    got_out.push_back(&got[i]);
    want_out.push_back(&want[i]);
  }
  const RemoteDispatch::Counters before = d->counters();
  ASSERT_OK(d->DownloadRangesInto(shared_reads, absl::MakeSpan(got_out)));
  const RemoteDispatch::Counters after = d->counters();
  ASSERT_OK(plain->DownloadRangesInto(plain_reads, absl::MakeSpan(want_out)));
  EXPECT_EQ(after.shared_bytes - before.shared_bytes, total);
  EXPECT_EQ(after.round_trips - before.round_trips, (total + kPiece - 1) / kPiece);
  EXPECT_LT(after.bytes_received - before.bytes_received, 4096u) << "no data on the stream";
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::vector<uint8_t>& source = parts[i].second ? reversed : bytes;
    EXPECT_EQ(got[i].size(), parts[i].length) << "range " << i;
    EXPECT_TRUE(std::equal(got[i].begin(), got[i].end(), source.begin() + parts[i].offset))
        << "range " << i;
    EXPECT_TRUE(got[i] == want[i]) << "range " << i << " as the stream brings it";
  }
  // A freed buffer among the ranges: no piece goes; the daemon says what is wrong, as it does
  // to a read on the stream (a request of its own).
  ASSERT_OK(d->Free(b));
  const RemoteDispatch::Counters before_freed = d->counters();
  EXPECT_THAT(d->DownloadRangesInto(shared_reads, absl::MakeSpan(got_out)),
              StatusIs(Code::kNotFound));
  EXPECT_EQ(d->counters().shared_bytes, before_freed.shared_bytes);
  EXPECT_EQ(d->counters().round_trips, before_freed.round_trips + 1);
}

TEST_F(SharedMemoryTest, WithoutAUnixSocketOrWithItTurnedOffTheStreamCarriesEverything) {
  Start({"--shared_memory=false"});
  auto d = Connect(address_);
  EXPECT_FALSE(d->shared_memory());
  const std::vector<uint8_t> bytes = RandomBytes(size_t{2} << 20, 8);
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(bytes.size()));
  ASSERT_OK(d->Upload(r, bytes));
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> back, d->Download(r));
  EXPECT_TRUE(back == bytes);
  EXPECT_EQ(d->counters().shared_bytes, 0u);
  d.reset();
  daemon_.reset();
  ASSERT_OK_AND_ASSIGN(daemon_, DaemonProcess::Start({"--backend=cpu"}));  // TCP
  auto tcp = Connect(daemon_->address());
  EXPECT_FALSE(tcp->shared_memory());
}

// A region counts its size to its client's share while the daemon maps it: its pages stay as
// long as the daemon does, and a read into pages the client never touched has the daemon bring
// them in. An attach is refused past the share, or where it would leave less than a chunk of
// it (a client at its share has its streams read no more, and a region stays): the region
// before it stays, and a client falls back to the stream. The session's end gives it back.
TEST_F(SharedMemoryTest, ARegionCountsToItsClientsShareWhileItIsMapped) {
  Start({"--max_request_bytes=16M", "--max_transfer_bytes=64M",
         "--client_transfer_bytes=40M", "--max_chunk_size=2M"});
  const auto in_use = [&] {
    absl::StatusOr<v1::GetInfoResponse> info = GetServerInfo(address_, absl::Seconds(10));
    return info.ok() ? info->transfer_bytes_in_use() : ~uint64_t{0};
  };
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  std::vector<std::unique_ptr<RawSession>> sessions;
  std::vector<v1::SharedMemoryOffer> offers;
  for (int i = 0; i < 4; ++i) {
    sessions.push_back(std::make_unique<RawSession>(address_));
    offers.push_back(RawOpen(*sessions.back()));
  }
  const auto attach = [&](int session, uint64_t bytes) {
    const int fd = MakeMemfd(bytes, true);
    const std::string answer = Attach(offers[session].socket(), offers[session].token(), fd);
    close(fd);  // the daemon's mapping keeps the memory
    return answer;
  };
  EXPECT_EQ(attach(0, 16 * kMiB), "OK\n");
  EXPECT_EQ(attach(1, 16 * kMiB), "OK\n");
  EXPECT_EQ(in_use(), 32 * kMiB) << "two regions of 16 MiB";
  const std::string refused = attach(2, 16 * kMiB);  // past the client's 40 MiB
  EXPECT_THAT(refused, HasSubstr("ERR 8 "));
  EXPECT_THAT(refused, HasSubstr("--client_transfer_bytes"));
  EXPECT_EQ(attach(2, 4 * kMiB), "OK\n");  // 36 MiB, and a chunk's room
  EXPECT_EQ(in_use(), 36 * kMiB);
  EXPECT_THAT(attach(3, 4 * kMiB), HasSubstr("ERR 8 ")) << "it would leave no room";
  for (std::unique_ptr<RawSession>& session : sessions) EXPECT_OK(session->Ping());
  // A region replaced goes once the one after it is attached.
  EXPECT_EQ(attach(2, 2 * kMiB), "OK\n");
  EXPECT_EQ(in_use(), 34 * kMiB);
  // It is in use: an upload through it.
  ASSERT_OK_AND_ASSIGN(uint64_t h, sessions[2]->Allocate(2 * kMiB));
  v1::SessionRequest upload;
  v1::Range& range = *upload.mutable_upload()->add_ranges();
  range.set_handle(h);
  range.set_length(2 * kMiB);
  upload.mutable_upload()->mutable_shared()->set_length(2 * kMiB);
  upload.mutable_upload()->set_last(true);
  EXPECT_OK(sessions[2]->Call(upload, sessions[2]->NextId()));
  sessions.clear();  // the sessions end, and the daemon unmaps their regions
  EXPECT_TRUE(WaitUntil(absl::Seconds(30), [&] { return in_use() == 0; }))
      << in_use() << " bytes still counted";
}

TEST_F(SharedMemoryTest, TheSideSocketRefusesWhatIsNotASealedMemfdOfAnOpenSession) {
  Start({"--max_request_bytes=16M", "--max_transfer_bytes=64M"});
  const std::string side = dir_ + "/sluiced.sock.shm";
  RawSession raw(address_);
  const v1::SharedMemoryOffer offer = RawOpen(raw);
  EXPECT_EQ(offer.socket(), side);
  EXPECT_EQ(offer.token().size(), kSharedMemoryTokenBytes);
  EXPECT_EQ(offer.max_bytes(), uint64_t{16} << 20);
  ASSERT_OK_AND_ASSIGN(uint64_t h, raw.Allocate(1 << 20));

  // Naming shared memory before any is attached.
  v1::SessionRequest upload;
  v1::Range& range = *upload.mutable_upload()->add_ranges();
  range.set_handle(h);
  range.set_length(1 << 20);
  upload.mutable_upload()->mutable_shared()->set_length(1 << 20);
  upload.mutable_upload()->set_last(true);
  EXPECT_THAT(raw.Call(upload, raw.NextId()), StatusIs(Code::kFailedPrecondition));

  // What is not a sealed memfd, a wrong token, no descriptor, too much memory.
  char file_template[] = "/tmp/sluice-shm-file-XXXXXX";
  const int file = mkstemp(file_template);
  ASSERT_GE(file, 0);
  ASSERT_EQ(ftruncate(file, 1 << 20), 0);
  unlink(file_template);
  EXPECT_THAT(Attach(side, offer.token(), file), HasSubstr("ERR 9 "));
  close(file);
  const int unsealed = MakeMemfd(1 << 20, false);
  EXPECT_THAT(Attach(side, offer.token(), unsealed), HasSubstr("F_SEAL_SHRINK"));
  close(unsealed);
  const int sealed = MakeMemfd(1 << 20, true);
  EXPECT_THAT(Attach(side, std::string(kSharedMemoryTokenBytes, 'x'), sealed),
              HasSubstr("ERR 5 "));
  EXPECT_THAT(Attach(side, offer.token(), -1), HasSubstr("ERR 3 "));
  EXPECT_THAT(Attach(side, "short", sealed), HasSubstr("ERR 3 "));
  const int huge = MakeMemfd(uint64_t{32} << 20, true);
  EXPECT_THAT(Attach(side, offer.token(), huge), HasSubstr("ERR 8 "));
  close(huge);
  // A sealed memfd of huge pages, where the system makes one.
  const int hugetlb = memfd_create("test", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_HUGETLB);
  if (hugetlb >= 0 && ftruncate(hugetlb, 2 << 20) == 0 &&
      fcntl(hugetlb, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0) {
    EXPECT_THAT(Attach(side, offer.token(), hugetlb),
                AllOf(HasSubstr("ERR 9 "), HasSubstr("not MFD_HUGETLB")));
  }
  if (hugetlb >= 0) close(hugetlb);
  // A connection that says nothing is dropped within a second; attaches go on meanwhile.
  absl::StatusOr<int> silent = ConnectUnixSocket(side, absl::Seconds(10));
  ASSERT_OK(silent.status());
  EXPECT_EQ(Attach(side, offer.token(), sealed), "OK\n");
  std::string said;
  char buffer[256];
  for (ssize_t n; (n = recv(*silent, buffer, sizeof(buffer), 0)) > 0;) said.append(buffer, n);
  EXPECT_THAT(said, HasSubstr("ERR 4 ")) << "told why, then closed";
  close(*silent);

  // Attached: spans are checked against it.
  void* memory = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, sealed, 0);
  ASSERT_NE(memory, MAP_FAILED);
  std::memset(memory, 0x5a, 1 << 20);
  EXPECT_NE(ftruncate(sealed, 0), 0) << "the seals hold: the daemon's mapping cannot lose pages";
  EXPECT_OK(raw.Call(upload, raw.NextId()));
  ASSERT_OK_AND_ASSIGN(std::string read, raw.Read(h, 0, 1 << 20));
  EXPECT_EQ(read, std::string(1 << 20, '\x5a'));
  upload.mutable_upload()->mutable_shared()->set_offset(1);
  EXPECT_THAT(raw.Call(upload, raw.NextId()), StatusIs(Code::kOutOfRange));
  upload.mutable_upload()->mutable_shared()->set_offset(0);
  upload.mutable_upload()->mutable_shared()->set_length(5);
  EXPECT_THAT(raw.Call(upload, raw.NextId()), StatusIs(Code::kInvalidArgument));
  upload.mutable_upload()->mutable_shared()->set_length(1 << 20);
  upload.mutable_upload()->set_data("x");
  EXPECT_THAT(raw.Call(upload, raw.NextId()), StatusIs(Code::kInvalidArgument));
  // A read into it lands there, and nothing comes on the stream.
  v1::SessionRequest into;
  v1::Range& whole = *into.mutable_read()->add_ranges();
  whole.set_handle(h);
  whole.set_offset(10);
  whole.set_length(6);
  into.mutable_read()->mutable_shared()->set_offset(100);
  into.mutable_read()->mutable_shared()->set_length(6);
  std::string data;
  EXPECT_OK(raw.Call(into, raw.NextId(), nullptr, &data));
  EXPECT_TRUE(data.empty());
  munmap(memory, 1 << 20);
  close(sealed);

  // A session that did not ask has none, whatever it names.
  RawSession other(address_);
  ASSERT_OK(other.Open().status());
  ASSERT_OK_AND_ASSIGN(uint64_t h2, other.Allocate(1 << 20));
  upload.mutable_upload()->mutable_ranges(0)->set_handle(h2);
  upload.mutable_upload()->clear_data();
  EXPECT_THAT(other.Call(upload, other.NextId()), StatusIs(Code::kFailedPrecondition));
}

}  // namespace
}  // namespace sluice::testing
