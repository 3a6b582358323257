// The session protocol on its own, without gRPC: requests in, jobs out, replies from running
// them on a CPU device's session; and the table of operations it dispatches through.
#include "sluice/server/session_protocol.h"

#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/status_macros.h"
#include "sluice/base/warm_buffers.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/server/metrics.h"
#include "sluice/server/ops/op_table.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using Code = absl::StatusCode;
using Responses = SessionProtocol::Responses;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = uint64_t{1} << 20;

absl::StatusCode CodeOf(const v1::SessionResponse& reply) {
  return static_cast<absl::StatusCode>(reply.status().code());
}

TEST(OpTableTest, EveryCaseOfTheOpOneofHasOneRowNamedAsItsField) {
  const google::protobuf::OneofDescriptor* oneof =
      v1::SessionRequest::descriptor()->FindOneofByName("op");
  ASSERT_NE(oneof, nullptr);
  EXPECT_EQ(static_cast<size_t>(oneof->field_count()), kOpCount);
  for (int i = 0; i < oneof->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = oneof->field(i);
    const OpSpec* spec = FindOp(static_cast<v1::SessionRequest::OpCase>(field->number()));
    ASSERT_NE(spec, nullptr) << field->name() << " has no row in kOpTable";
    EXPECT_EQ(spec->name, field->name());
    EXPECT_EQ(Metrics::KindName(spec->op), field->name());
    // A row either assembles its messages or has a handler, never both.
    EXPECT_NE(spec->chunked, spec->accept != nullptr) << field->name();
  }
  EXPECT_EQ(FindOp(v1::SessionRequest::OP_NOT_SET), nullptr);
  EXPECT_EQ(Metrics::KindName(v1::SessionRequest::OP_NOT_SET), "none");
}

TEST(OpTableTest, TheMetricsHaveASeriesForEveryOperation) {
  Metrics metrics;
  for (const OpSpec& spec : Ops()) {
    metrics.RequestDone(spec.op, absl::StatusCode::kOk, absl::ZeroDuration(),
                        absl::ZeroDuration());
  }
  metrics.RequestDone(v1::SessionRequest::OP_NOT_SET, absl::StatusCode::kInvalidArgument,
                      absl::ZeroDuration(), absl::ZeroDuration());
  std::set<std::string> kinds;
  for (const prometheus::MetricFamily& family : metrics.registry()->Collect()) {
    if (family.name != "sluice_requests_total") continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        if (label.name == "kind") kinds.insert(label.value);
      }
    }
  }
  std::set<std::string> expected = {"none"};
  for (const OpSpec& spec : Ops()) expected.insert(std::string(spec.name));
  EXPECT_EQ(kinds, expected);
}

class SessionProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(device_, CpuDevice::Create({.memory_limit = 256 * kMiB, .threads = 1}));
    manager_ = std::make_unique<SessionManager>(device_, SessionManager::Options{});
    protocol_ = std::make_unique<SessionProtocol>(manager_.get(), "ipv4:127.0.0.1:5000",
                                                  /*listener=*/nullptr);
  }
  void TearDown() override {
    if (protocol_ != nullptr) protocol_->Close("the test ended");
  }

  // Accepts `request`, returning the jobs it completes.
  std::vector<SessionProtocol::Job> Accept(v1::SessionRequest request) {
    std::vector<SessionProtocol::Job> jobs;
    protocol_->Accept(request, &jobs);
    return jobs;
  }
  // Runs `jobs` in order, with every window of a read that streams; returns their replies.
  Responses RunAll(std::vector<SessionProtocol::Job> jobs) {
    Responses out;
    for (SessionProtocol::Job& job : jobs) {
      Run(job, &out);
      while (protocol_->read_streaming()) ContinueRead(&out);
    }
    return out;
  }
  // Runs `job`, or a streaming read's next window, appending the replies to `out`; a data
  // reply whose bytes are in the read's block gets them, as the transport sends it.
  void Run(SessionProtocol::Job& job, Responses* out) {
    const size_t first = out->size();
    protocol_->Run(job, out);
    TakeBlock(out, first);
  }
  void ContinueRead(Responses* out) {
    const size_t first = out->size();
    protocol_->ContinueRead(out);
    TakeBlock(out, first);
  }
  // Runs `job`, a read that streams, with each of its next windows; returns how many windows
  // it made (0: it did not stream).
  int RunWindows(SessionProtocol::Job& job, Responses* out) {
    Run(job, out);
    if (!protocol_->read_streaming()) return 0;
    int windows = 1;
    for (; protocol_->read_streaming(); ++windows) ContinueRead(out);
    return windows;
  }
  void TakeBlock(Responses* out, size_t first) {
    const ReplyBlock block = protocol_->TakeReadBlock();
    for (size_t i = first; i < out->size(); ++i) {
      v1::SessionResponse& reply = (*out)[i];
      if (!reply.has_data() || !reply.data().data().empty()) continue;
      const absl::Span<const uint8_t> piece = block.PieceAt(reply.data().offset());
      reply.mutable_data()->set_data(piece.data(), piece.size());
    }
  }
  // Accepts and runs `request`; returns its replies.
  Responses Call(v1::SessionRequest request) { return RunAll(Accept(std::move(request))); }

  static v1::SessionRequest Open(uint64_t id, uint32_t chunk_size = 0) {
    v1::SessionRequest request;
    request.set_id(id);
    request.mutable_open()->set_client_name("protocol test");
    request.mutable_open()->set_chunk_size(chunk_size);
    return request;
  }
  static v1::SessionRequest Allocate(uint64_t id, uint64_t bytes, uint64_t handle) {
    v1::SessionRequest request;
    request.set_id(id);
    request.mutable_allocate()->set_bytes(bytes);
    request.mutable_allocate()->set_handle(handle);
    return request;
  }
  static v1::SessionRequest UploadFirst(uint64_t id, uint64_t handle, uint64_t length,
                                        std::string data, bool last) {
    v1::SessionRequest request;
    request.set_id(id);
    v1::Range& range = *request.mutable_upload()->add_ranges();
    range.set_handle(handle);
    range.set_length(length);
    request.mutable_upload()->set_data(std::move(data));
    request.mutable_upload()->set_last(last);
    return request;
  }
  static v1::SessionRequest UploadMore(uint64_t id, std::string data, bool last) {
    v1::SessionRequest request;
    request.set_id(id);
    request.mutable_upload()->set_data(std::move(data));
    request.mutable_upload()->set_last(last);
    return request;
  }
  static v1::SessionRequest Read(uint64_t id, uint64_t handle, uint64_t offset,
                                 uint64_t length) {
    v1::SessionRequest request;
    request.set_id(id);
    v1::Range& range = *request.mutable_read()->add_ranges();
    range.set_handle(handle);
    range.set_offset(offset);
    range.set_length(length);
    return request;
  }

  // Opens the session; returns its chunk size.
  uint32_t OpenSession(uint32_t chunk_size = 0) {
    const Responses opened = Call(Open(1, chunk_size));
    EXPECT_EQ(opened.size(), 1u);
    EXPECT_EQ(CodeOf(opened.back()), Code::kOk);
    EXPECT_TRUE(protocol_->open());
    return opened.back().open().limits().chunk_size();
  }

  // The data of a read's replies, concatenated at their offsets; the last reply's status.
  static std::string DataOf(const Responses& replies, uint64_t id) {
    std::string data;
    for (const v1::SessionResponse& reply : replies) {
      if (reply.id() != id || !reply.has_data()) continue;
      EXPECT_EQ(reply.data().offset(), data.size());
      data += reply.data().data();
    }
    return data;
  }

  std::shared_ptr<CpuDevice> device_;
  std::unique_ptr<SessionManager> manager_;
  std::unique_ptr<SessionProtocol> protocol_;
};

TEST_F(SessionProtocolTest, AnUploadInChunksIsReadBackInChunks) {
  const uint32_t chunk = OpenSession(/*chunk_size=*/64 << 10);
  ASSERT_EQ(chunk, 64u << 10);
  const uint64_t bytes = 5 * chunk + 123;
  std::mt19937_64 rng(36);
  std::string data(bytes, '\0');
  for (char& c : data) c = static_cast<char>(rng() & 0xff);

  ASSERT_EQ(CodeOf(Call(Allocate(2, bytes, 0x70)).back()), Code::kOk);
  std::vector<SessionProtocol::Job> jobs;
  for (uint64_t at = 0; at < bytes; at += chunk) {
    const bool last = at + chunk >= bytes;
    std::string piece = data.substr(at, chunk);
    std::vector<SessionProtocol::Job> made =
        Accept(at == 0 ? UploadFirst(3, 0x70, bytes, std::move(piece), last)
                       : UploadMore(3, std::move(piece), last));
    EXPECT_EQ(made.size(), last ? 1u : 0u);  // one job, once its last chunk arrived
    EXPECT_EQ(protocol_->upload_pending(), !last);
    for (auto& job : made) jobs.push_back(std::move(job));
  }
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_FALSE(jobs[0].cheap);  // over 64 KiB: a transfer that queues
  // Its data, its range and its blocks' places in the list.
  EXPECT_GE(jobs[0].staged, bytes);
  EXPECT_LE(jobs[0].staged, bytes + 1024);
  const Responses uploaded = RunAll(std::move(jobs));
  ASSERT_EQ(uploaded.size(), 1u);
  EXPECT_EQ(CodeOf(uploaded[0]), Code::kOk);

  const Responses read = Call(Read(4, 0x70, 0, bytes));
  ASSERT_EQ(read.size(), 6u);  // one data reply per chunk, the last one final
  EXPECT_TRUE(read.back().last());
  EXPECT_EQ(CodeOf(read.back()), Code::kOk);
  EXPECT_EQ(DataOf(read, 4), data);
}

TEST_F(SessionProtocolTest, AReadOfMoreThanAWindowStreamsWindowByWindow) {
  OpenSession();
  const uint64_t bytes = kReadWindowBytes * 2 + 4096;
  ASSERT_EQ(CodeOf(Call(Allocate(2, bytes, 0x71)).back()), Code::kOk);
  std::vector<SessionProtocol::Job> jobs = Accept(Read(3, 0x71, 0, bytes));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_TRUE(jobs[0].read_only);
  Responses out;
  EXPECT_EQ(RunWindows(jobs[0], &out), 3);
  EXPECT_EQ(absl::c_count_if(out, [](const v1::SessionResponse& r) { return r.last(); }), 1);
  EXPECT_TRUE(out.back().last());
  EXPECT_EQ(CodeOf(out.back()), Code::kOk);
  EXPECT_EQ(DataOf(out, 3), std::string(bytes, '\0'));  // a new buffer reads as zeros
}

// An execute's reads of more than a window stream as a plain read's do: the first window
// behind the steps, the rest after. A bad step, or a bad read anywhere in them, is refused
// before anything runs or streams.
TEST_F(SessionProtocolTest, AnExecutesReadsOfMoreThanAWindowStreamBehindItsSteps) {
  OpenSession();
  const uint64_t bytes = kReadWindowBytes * 2 + 4096;
  ASSERT_EQ(CodeOf(Call(Allocate(2, bytes, 0x72)).back()), Code::kOk);
  // A fill of the buffer, then reads of its first 4 KiB and of `rest` bytes after them.
  const auto execute = [&](uint64_t id, const std::string& kernel, uint32_t version,
                           uint64_t rest_offset, uint64_t rest_length) {
    v1::SessionRequest request;
    request.set_id(id);
    v1::Step& fill = *request.mutable_execute()->add_prefix();
    fill.set_kernel(kernel);
    fill.set_version(version);
    fill.add_params(0x01020304);
    fill.add_handles(0x72);
    v1::Range& head = *request.mutable_execute()->add_reads();
    head.set_handle(0x72);
    head.set_length(4096);
    v1::Range& rest = *request.mutable_execute()->add_reads();
    rest.set_handle(0x72);
    rest.set_offset(rest_offset);
    rest.set_length(rest_length);
    return request;
  };
  // Refused before anything runs, with the code a whole execute's checks give, in their order
  // (its steps before its reads), whether its reads would stream or not: the last two have a
  // step of a version this kernel is not, and a read past the end, of 16 MiB or of 4 KiB.
  for (const auto& [kernel, version, rest_offset, rest_length, code] :
       {std::tuple<std::string, uint32_t, uint64_t, uint64_t, Code>{
            "no_such_kernel", 0, 4096, bytes - 4096, Code::kNotFound},
        {"fill_u32", 0, 4096, bytes - 4095, Code::kOutOfRange},
        {"fill_u32", 999, 4096, bytes - 4095, Code::kFailedPrecondition},
        {"fill_u32", 999, bytes - 4096, 4097, Code::kFailedPrecondition}}) {
    SCOPED_TRACE(absl::StrFormat("%s version %d, reads of 4096 and %d", kernel, version,
                                 rest_length));
    std::vector<SessionProtocol::Job> jobs =
        Accept(execute(3, kernel, version, rest_offset, rest_length));
    ASSERT_EQ(jobs.size(), 1u);
    Responses refused;
    Run(jobs[0], &refused);
    EXPECT_FALSE(protocol_->read_streaming());
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_EQ(CodeOf(refused[0]), code) << refused[0].status().message();
  }
  EXPECT_EQ(DataOf(Call(Read(4, 0x72, 0, 4)), 4), std::string(4, '\0')) << "the fill never ran";

  std::vector<SessionProtocol::Job> jobs = Accept(execute(5, "fill_u32", 0, 4096, bytes - 4096));
  ASSERT_EQ(jobs.size(), 1u);
  Responses out;
  EXPECT_EQ(RunWindows(jobs[0], &out), 3);
  EXPECT_TRUE(out.back().last());
  EXPECT_EQ(CodeOf(out.back()), Code::kOk);
  std::string filled;
  for (uint64_t i = 0; i < bytes / 4; ++i) filled += std::string("\x04\x03\x02\x01", 4);
  EXPECT_TRUE(DataOf(out, 5) == filled);
}

TEST_F(SessionProtocolTest, AQueuedRequestCountsTheMemoryItsParsedMessageHolds) {
  OpenSession();
  // 100,000 empty steps, or ranges: 2 bytes each on the wire, a message each once parsed.
  v1::SessionRequest execute;
  execute.set_id(2);
  for (int k = 0; k < 100000; ++k) execute.mutable_execute()->add_prefix();
  v1::SessionRequest read;
  read.set_id(3);
  for (int k = 0; k < 100000; ++k) read.mutable_read()->add_ranges();
  for (const v1::SessionRequest& request : {execute, read}) {
    const uint64_t held = request.SpaceUsedLong();
    ASSERT_GT(held, 10 * request.ByteSizeLong());
    std::vector<SessionProtocol::Job> jobs = Accept(request);
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_GE(jobs[0].hold.bytes(), held);
    EXPECT_GE(jobs[0].staged, held);
  }
}

// An upload's data is copied into blocks of its own as it arrives: the heap's for a small one,
// a mapping's, counted a page at a time, for a large one. However small its chunks, it holds
// its bytes, its blocks' places and its ranges, no more, and the bytes read back are the
// bytes sent, across chunks and blocks.
TEST_F(SessionProtocolTest, AnUploadCountsItsRangesAndTheBlocksItsDataFills) {
  OpenSession(/*chunk_size=*/64 << 10);
  constexpr uint64_t kBuffer = (6 << 20) + 5;
  ASSERT_EQ(CodeOf(Call(Allocate(2, kBuffer, 0x70)).back()), Code::kOk);
  std::mt19937_64 random(17);
  uint64_t id = 3;
  // Chunks of one byte (the heap's blocks), and of 64 KiB, 7 bytes and 3 bytes short of it,
  // over two mapped blocks (4 MiB and what is left).
  for (const auto& [bytes, chunk] : {std::pair<uint64_t, uint64_t>{4096, 1}, {200000, 1},
                                    {kBuffer, 64 << 10}, {kBuffer, (64 << 10) - 7}}) {
    SCOPED_TRACE(absl::StrFormat("%d bytes in chunks of %d", bytes, chunk));
    std::string data(bytes, '\0');
    for (char& c : data) c = static_cast<char>(random());
    std::vector<SessionProtocol::Job> jobs =
        Accept(UploadFirst(id, 0x70, bytes, data.substr(0, chunk), chunk >= bytes));
    for (uint64_t at = chunk; at < bytes; at += chunk) {
      for (auto& job : Accept(UploadMore(id, data.substr(at, chunk), at + chunk >= bytes))) {
        jobs.push_back(std::move(job));
      }
    }
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_EQ(jobs[0].hold.bytes(), jobs[0].staged);
    EXPECT_GE(jobs[0].staged, bytes);
    // Its range, two blocks' places, the heap's rounding of a small block (at most an eighth)
    // and a large one's last page.
    EXPECT_LE(jobs[0].staged, bytes + bytes / 8 + 8192) << jobs[0].staged - bytes;
    EXPECT_EQ(CodeOf(RunAll(std::move(jobs)).back()), Code::kOk);
    EXPECT_EQ(DataOf(Call(Read(id + 1, 0x70, 0, bytes)), id + 1), data);
    id += 2;
  }
  // 65,536 ranges of no bytes: the list of ranges is counted though there is no data.
  v1::SessionRequest ranges = UploadFirst(id, 0x70, 0, "", true);
  const v1::Range none = ranges.upload().ranges(0);
  for (int k = 1; k < 65536; ++k) *ranges.mutable_upload()->add_ranges() = none;
  std::vector<SessionProtocol::Job> jobs = Accept(ranges);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_GE(jobs[0].hold.bytes(), 65536 * sizeof(RangeRef));
}

TEST_F(SessionProtocolTest, AnUploadsBlocksAreKeptWarmForTheNextWhichCountsThemWhole) {
  OpenSession(/*chunk_size=*/1 << 20);
  constexpr uint64_t kBytes = 2 * kUploadBlockBytes + (1 << 20);  // two blocks and the rest
  ASSERT_EQ(CodeOf(Call(Allocate(2, kBytes, 0x74)).back()), Code::kOk);
  WarmBuffers& warm = manager_->upload_blocks();
  ASSERT_GE(warm.limit(), 2 * kUploadBlockBytes);
  std::mt19937_64 random(23);
  uint64_t id = 3;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(absl::StrFormat("upload %d", round));
    const uint64_t reused = warm.reused();
    std::string data(kBytes, '\0');
    for (char& c : data) c = static_cast<char>(random());
    constexpr uint64_t kChunk = 1 << 20;
    // What its first chunk holds: a fresh block's first huge page, a warm block whole (beside
    // the record of the replies to the reads before it).
    const uint64_t before = manager_->transfers().in_use();
    EXPECT_TRUE(Accept(UploadFirst(id, 0x74, kBytes, data.substr(0, kChunk), false)).empty());
    const uint64_t held = manager_->transfers().in_use() - before;
    if (round == 0) {
      EXPECT_LT(held, kUploadBlockBytes);
    } else {
      EXPECT_GE(held, kUploadBlockBytes);
      EXPECT_LT(held, kUploadBlockBytes + kChunk);
    }
    std::vector<SessionProtocol::Job> jobs;
    for (uint64_t at = kChunk; at < kBytes; at += kChunk) {
      for (auto& job : Accept(UploadMore(id, data.substr(at, kChunk), at + kChunk >= kBytes))) {
        jobs.push_back(std::move(job));
      }
    }
    ASSERT_EQ(jobs.size(), 1u);
    EXPECT_LE(jobs[0].staged, kBytes + 8192) << "filled, a warm block counts as a fresh one";
    EXPECT_EQ(warm.reused(), reused + (round == 0 ? 0 : 2));
    EXPECT_EQ(CodeOf(RunAll(std::move(jobs)).back()), Code::kOk);
    // Once it has run, both blocks are kept for the next.
    EXPECT_EQ(warm.kept_bytes(), 2 * kUploadBlockBytes);
    EXPECT_EQ(DataOf(Call(Read(id + 1, 0x74, 0, kBytes)), id + 1), data);
    id += 2;
  }
  // Kept until unused for kWarmUploadKeep.
  manager_->ExpireUploadBlocks(absl::Now());
  EXPECT_EQ(warm.kept_bytes(), 2 * kUploadBlockBytes);
  manager_->ExpireUploadBlocks(absl::Now() + SessionManager::kWarmUploadKeep +
                               absl::Seconds(1));
  EXPECT_EQ(warm.kept_bytes(), 0u);
}

TEST_F(SessionProtocolTest, RequestsBeforeAnOpenAreRefused) {
  const Responses allocated = Call(Allocate(1, 64, 0));
  ASSERT_EQ(allocated.size(), 1u);
  EXPECT_EQ(CodeOf(allocated[0]), Code::kFailedPrecondition);
  // An upload is refused at its first message, before its data is held; its later chunks
  // are discarded up to its last.
  std::vector<SessionProtocol::Job> refused = Accept(UploadFirst(2, 0x1, 8, "abcd", false));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].run != nullptr, true);
  EXPECT_FALSE(protocol_->upload_pending());
  EXPECT_TRUE(Accept(UploadMore(2, "efgh", true)).empty());
  const Responses replies = RunAll(std::move(refused));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].id(), 2u);
  EXPECT_EQ(CodeOf(replies[0]), Code::kFailedPrecondition);
  EXPECT_THAT(replies[0].status().message(), HasSubstr("not open"));
}

TEST_F(SessionProtocolTest, AnotherRequestInterruptsAnUploadWhoseLaterChunksAreThenDropped) {
  OpenSession();
  ASSERT_EQ(CodeOf(Call(Allocate(2, 16, 0x72)).back()), Code::kOk);
  EXPECT_TRUE(Accept(UploadFirst(3, 0x72, 16, "12345678", false)).empty());
  v1::SessionRequest ping;
  ping.set_id(4);
  ping.mutable_ping()->set_payload("hello");
  std::vector<SessionProtocol::Job> jobs = Accept(ping);
  ASSERT_EQ(jobs.size(), 2u);  // the upload's refusal, then the ping
  EXPECT_TRUE(Accept(UploadMore(3, "87654321", true)).empty());
  const Responses replies = RunAll(std::move(jobs));
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].id(), 3u);
  EXPECT_EQ(CodeOf(replies[0]), Code::kInvalidArgument);
  EXPECT_THAT(replies[0].status().message(), HasSubstr("interrupted by request 4"));
  EXPECT_EQ(replies[1].id(), 4u);
  EXPECT_EQ(replies[1].ping().payload(), "hello");
  // Nothing was written.
  EXPECT_EQ(DataOf(Call(Read(5, 0x72, 0, 16)), 5), std::string(16, '\0'));
}

TEST_F(SessionProtocolTest, ACancelAnswersAQueuedRequestCancelledWithoutRunningIt) {
  OpenSession();
  std::vector<SessionProtocol::Job> queued = Accept(Allocate(2, 64, 0x73));
  ASSERT_EQ(queued.size(), 1u);
  v1::SessionRequest cancel;
  cancel.set_id(3);
  cancel.mutable_cancel()->set_target(2);
  std::vector<SessionProtocol::Job> cancels = Accept(cancel);
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_TRUE(cancels[0].cheap);
  const Responses allocated = RunAll(std::move(queued));
  ASSERT_EQ(allocated.size(), 1u);
  EXPECT_EQ(CodeOf(allocated[0]), Code::kCancelled);
  EXPECT_EQ(CodeOf(RunAll(std::move(cancels)).back()), Code::kOk);
  // It never ran: the handle holds no buffer.
  EXPECT_EQ(CodeOf(Call(Read(4, 0x73, 0, 8)).back()), Code::kNotFound);
  // A cancel naming no unfinished request says so.
  cancel.set_id(5);
  cancel.mutable_cancel()->set_target(2);
  EXPECT_EQ(CodeOf(Call(cancel).back()), Code::kNotFound);
}

TEST_F(SessionProtocolTest, EachJobTakesItsPoliciesFromItsRow) {
  std::vector<SessionProtocol::Job> open = Accept(Open(1));
  ASSERT_EQ(open.size(), 1u);
  EXPECT_TRUE(open[0].open);
  EXPECT_FALSE(open[0].cheap);
  EXPECT_NE(open[0].cancelled, nullptr);
  RunAll(std::move(open));
  v1::SessionRequest ping;
  ping.set_id(2);
  ping.mutable_ping();
  std::vector<SessionProtocol::Job> pinged = Accept(ping);
  ASSERT_EQ(pinged.size(), 1u);
  EXPECT_TRUE(pinged[0].cheap);
  EXPECT_TRUE(pinged[0].read_only);
  EXPECT_EQ(pinged[0].op, v1::SessionRequest::kPing);
  std::vector<SessionProtocol::Job> small_read = Accept(Read(3, 0x1, 0, 8));
  EXPECT_TRUE(small_read[0].cheap);
  EXPECT_TRUE(small_read[0].read_only);
  std::vector<SessionProtocol::Job> large_read = Accept(Read(4, 0x1, 0, kMiB));
  EXPECT_FALSE(large_read[0].cheap);
  std::vector<SessionProtocol::Job> allocate = Accept(Allocate(5, 8, 0x2));
  EXPECT_FALSE(allocate[0].cheap);
  EXPECT_FALSE(allocate[0].read_only);
  RunAll(std::move(pinged));
  RunAll(std::move(small_read));
  RunAll(std::move(large_read));
  RunAll(std::move(allocate));
}

TEST_F(SessionProtocolTest, ARequestWithNoOperationOrAnOversizedPingIsInvalid) {
  OpenSession();
  v1::SessionRequest empty;
  empty.set_id(2);
  const Responses none = Call(empty);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(CodeOf(none[0]), Code::kInvalidArgument);
  EXPECT_THAT(none[0].status().message(), HasSubstr("no operation"));
  v1::SessionRequest ping;
  ping.set_id(3);
  ping.mutable_ping()->set_payload(std::string(kMaxPingPayload + 1, 'p'));
  const Responses pinged = Call(ping);
  ASSERT_EQ(pinged.size(), 1u);
  EXPECT_EQ(CodeOf(pinged[0]), Code::kInvalidArgument);
}

TEST_F(SessionProtocolTest, CloseHandsOverTheTicketAndASecondOpenIsRefused) {
  OpenSession();
  const Responses again = Call(Open(2));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(CodeOf(again[0]), Code::kFailedPrecondition);
  EXPECT_EQ(manager_->active_sessions(), 1u);
  std::unique_ptr<SessionManager::Ticket> ticket = protocol_->Close("done");
  ASSERT_NE(ticket, nullptr);
  EXPECT_FALSE(protocol_->open());
  ticket.reset();
  EXPECT_EQ(manager_->active_sessions(), 0u);
  protocol_.reset();
}

}  // namespace
}  // namespace sluice
