// What a request holds once parsed, read from its bytes unparsed: a bound from above of what
// the parse then holds (SpaceUsedLong), for requests as clients send them and as hostile ones
// do (many empty elements, unknown fields and groups, fields in the wrong wire type), and for
// any bytes the parse accepts; nothing for bytes it refuses.
#include "sluice/server/parsed_size.h"

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/unknown_field_set.h"
#include "gtest/gtest.h"
#include "sluice/server/ops/session_state.h"
#include "sluice/server/session_protocol.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {
namespace {

std::optional<uint64_t> SizeOf(const std::string& bytes) {
  static const ParsedSize sized(v1::SessionRequest::descriptor());
  google::protobuf::io::ArrayInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  return sized.Of(&in);
}

// The bound holds for `request` sent as it is, and is not wildly above what it holds.
void ExpectBounded(const v1::SessionRequest& request, const std::string& what) {
  const std::string bytes = request.SerializeAsString();
  v1::SessionRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes)) << what;
  const std::optional<uint64_t> size = SizeOf(bytes);
  ASSERT_TRUE(size.has_value()) << what;
  EXPECT_GE(*size, parsed.SpaceUsedLong()) << what;
  EXPECT_LE(*size, 3 * parsed.SpaceUsedLong() + 4096) << what;
}

v1::SessionRequest ManyEmptySteps(int steps) {
  v1::SessionRequest request;
  request.set_id(7);
  for (int i = 0; i < steps; ++i) request.mutable_execute()->add_prefix();
  return request;
}

v1::SessionRequest ManyEmptyRanges(int ranges) {
  v1::SessionRequest request;
  request.set_id(8);
  for (int i = 0; i < ranges; ++i) request.mutable_read()->add_ranges();
  return request;
}

TEST(ParsedSizeTest, RequestsAsClientsSendThemAreBoundedFromAbove) {
  v1::SessionRequest ping;
  ping.set_id(1);
  ping.mutable_ping()->set_payload("hello");
  ExpectBounded(ping, "ping");
  v1::SessionRequest read;
  read.set_id(2);
  v1::Range& range = *read.mutable_read()->add_ranges();
  range.set_handle(0x1234567890);
  range.set_length(4096);
  ExpectBounded(read, "read");
  v1::SessionRequest upload;
  upload.set_id(3);
  upload.mutable_upload()->set_data(std::string(1 << 20, 'x'));
  upload.mutable_upload()->set_last(true);
  ExpectBounded(upload, "upload chunk");
  v1::SessionRequest execute;
  execute.set_id(4);
  for (int i = 0; i < 40; ++i) {
    v1::Step& step = *execute.mutable_execute()->add_prefix();
    step.set_kernel("ifds_propagate_a_kernel_with_a_long_name");
    for (int p = 0; p < 12; ++p) step.add_params(uint64_t{1} << (5 * p));
    for (int h = 0; h < 9; ++h) step.add_handles(0xabcdef00 + h);
  }
  execute.mutable_execute()->set_repeat_count(3);
  ExpectBounded(execute, "execute");
}

TEST(ParsedSizeTest, ManyEmptyElementsAreCountedAsTheObjectsTheyBecome) {
  // 2 bytes each on the wire, an object each parsed.
  ExpectBounded(ManyEmptySteps(100000), "empty steps");
  ExpectBounded(ManyEmptyRanges(100000), "empty ranges");
  v1::SessionRequest params;
  for (int i = 0; i < 100000; ++i) params.mutable_execute()->add_prefix()->add_params(1);
  ExpectBounded(params, "a one-byte param a step");
  v1::SessionRequest strings;
  for (int i = 0; i < 50000; ++i) strings.mutable_execute()->add_prefix()->set_kernel("k");
  ExpectBounded(strings, "one-byte kernel names");
}

TEST(ParsedSizeTest, UnknownFieldsAndGroupsAreCounted) {
  v1::SessionRequest request = ManyEmptySteps(3);
  google::protobuf::UnknownFieldSet* unknown = request.GetReflection()->MutableUnknownFields(
      &request);
  for (int i = 0; i < 20000; ++i) {
    unknown->AddVarint(1000 + i % 7, i);
    unknown->AddLengthDelimited(2000, i % 3 == 0 ? std::string(100, 'u') : "");
    unknown->AddFixed32(3000, i);
    google::protobuf::UnknownFieldSet* group = unknown->AddGroup(4000);
    if (i % 5 == 0) group->AddGroup(4001)->AddVarint(1, i);
  }
  // And inside a step.
  v1::Step& step = *request.mutable_execute()->mutable_prefix(1);
  step.GetReflection()->MutableUnknownFields(&step)->AddLengthDelimited(99, "x");
  ExpectBounded(request, "unknown fields");
}

TEST(ParsedSizeTest, KnownFieldsInAnotherWireTypeAreCountedAsUnknown) {
  // Field 1 of a Range (a fixed64) sent as a varint, field 2 (a varint) as fixed64, and a
  // Step's params (packed varints) one value at a time.
  std::string range_bytes;
  for (int i = 0; i < 1000; ++i) {
    range_bytes += std::string("\x08\x01\x11", 3) + std::string(8, '\0');
  }
  std::string step_bytes;
  for (int i = 0; i < 1000; ++i) step_bytes += std::string("\x10\x05", 2);
  v1::SessionRequest request;
  request.mutable_execute()->add_prefix()->ParseFromString(step_bytes);
  ASSERT_EQ(request.execute().prefix(0).params_size(), 1000);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(request.mutable_execute()->add_reads()->ParseFromString(range_bytes));
  }
  ExpectBounded(request, "fields in another wire type");
}

TEST(ParsedSizeTest, AnyBytesTheParseAcceptsHaveABoundAndNoneItRefuses) {
  // Bytes near requests: each valid request cut, with bytes changed, inserted or dropped.
  std::mt19937_64 random(20261206);
  v1::SessionRequest base = ManyEmptySteps(6);
  v1::Step& step = *base.mutable_execute()->mutable_prefix(2);
  step.set_kernel("ifds");
  step.add_params(300);
  step.add_handles(5);
  base.mutable_execute()->add_reads()->set_length(9);
  const std::string seed = base.SerializeAsString();
  int accepted = 0, refused = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string bytes = seed;
    const int edits = 1 + static_cast<int>(random() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t at = random() % bytes.size();
      switch (random() % 4) {
        case 0:
          bytes[at] = static_cast<char>(random());
          break;
        case 1:
          bytes.insert(bytes.begin() + static_cast<ptrdiff_t>(at), static_cast<char>(random()));
          break;
        case 2:
          bytes.erase(at, 1);
          break;
        default:
          bytes.resize(at);
          break;
      }
    }
    v1::SessionRequest parsed;
    const bool parses = parsed.ParseFromString(bytes);
    const std::optional<uint64_t> size = SizeOf(bytes);
    if (parses) {
      ++accepted;
      ASSERT_TRUE(size.has_value()) << "trial " << trial;
      EXPECT_GE(*size, parsed.SpaceUsedLong()) << "trial " << trial;
    } else if (!size.has_value()) {
      ++refused;
    }
  }
  // Both kinds occur (a test that saw only one would prove little).
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(refused, 1000);
}

TEST(ParsedSizeTest, BytesThatAreNotAMessageHaveNoSize) {
  const std::string whole = ManyEmptySteps(4).SerializeAsString();
  EXPECT_FALSE(SizeOf(whole.substr(0, whole.size() - 1)).has_value()) << "cut short";
  EXPECT_FALSE(SizeOf(std::string("\x0f\x01", 2)).has_value()) << "wire type 7";
  EXPECT_FALSE(SizeOf(std::string("\x0b\x08\x01", 3)).has_value()) << "a group never ended";
  EXPECT_FALSE(SizeOf(std::string("\x0c", 1)).has_value()) << "an end without a start";
  EXPECT_FALSE(SizeOf(std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12))
                   .has_value())
      << "a varint of 11 bytes";
  // Nested deeper than anything parses: groups within groups.
  std::string deep;
  for (int i = 0; i < ParsedSize::kMaxDepth + 1; ++i) deep += "\xbb\x3e";  // group 999
  for (int i = 0; i < ParsedSize::kMaxDepth + 1; ++i) deep += "\xbc\x3e";
  EXPECT_FALSE(SizeOf(deep).has_value());
  v1::SessionRequest parsed;
  EXPECT_FALSE(parsed.ParseFromString(deep));
}

std::optional<v1::SessionRequest> HeadOf(const std::string& bytes) {
  google::protobuf::io::ArrayInputStream in(bytes.data(), static_cast<int>(bytes.size()));
  return SessionProtocol::HeadOf(&in);
}

// What a refusal of a request unparsed needs of it: its id, settled_through and operation, and
// an upload's `last`, as the parse would find them.
TEST(ParsedSizeTest, ARequestsHeadIsWhatItsParseWouldSay) {
  v1::SessionRequest upload = ManyEmptyRanges(0);
  upload.set_id(41);
  upload.set_settled_through(40);
  upload.mutable_upload()->add_ranges()->set_length(3);
  upload.mutable_upload()->set_data("abc");
  upload.mutable_upload()->set_last(true);
  std::optional<v1::SessionRequest> head = HeadOf(upload.SerializeAsString());
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->id(), 41u);
  EXPECT_EQ(head->settled_through(), 40u);
  EXPECT_EQ(head->op_case(), v1::SessionRequest::kUpload);
  EXPECT_TRUE(head->upload().last());
  EXPECT_EQ(head->upload().ranges_size(), 0) << "nothing else is read";
  // An operation given twice: the last is the one kept, and an upload's `last` merges.
  v1::SessionRequest ping;
  ping.mutable_ping()->set_payload("p");
  v1::SessionRequest more_upload;
  more_upload.mutable_upload()->set_data("d");
  for (const auto& [bytes, op, last] :
       std::vector<std::tuple<std::string, v1::SessionRequest::OpCase, bool>>{
           {upload.SerializeAsString() + ping.SerializeAsString(), v1::SessionRequest::kPing,
            false},
           {ping.SerializeAsString() + upload.SerializeAsString(), v1::SessionRequest::kUpload,
            true},
           {upload.SerializeAsString() + more_upload.SerializeAsString(),
            v1::SessionRequest::kUpload, true},
           {std::string(), v1::SessionRequest::OP_NOT_SET, false}}) {
    v1::SessionRequest parsed;
    ASSERT_TRUE(parsed.ParseFromString(bytes));
    head = HeadOf(bytes);
    ASSERT_TRUE(head.has_value());
    EXPECT_EQ(head->op_case(), op);
    EXPECT_EQ(head->op_case(), parsed.op_case());
    EXPECT_EQ(head->id(), parsed.id());
    EXPECT_EQ(head->upload().last(), last);
    EXPECT_EQ(head->upload().last(), parsed.upload().last());
  }
  const std::string whole = upload.SerializeAsString();
  EXPECT_FALSE(HeadOf(whole.substr(0, whole.size() - 1)).has_value());
}

// A message of at most kSizedFromBytes is parsed before it is counted: whatever its shape, it
// holds at most kCheapBytes once parsed.
TEST(ParsedSizeTest, AMessageTooSmallToBeSizedHoldsLittleParsed) {
  const int elements = static_cast<int>(kSizedFromBytes / 2);
  for (const v1::SessionRequest& request : {ManyEmptySteps(elements), ManyEmptyRanges(elements)}) {
    const std::string bytes = request.SerializeAsString();
    ASSERT_LE(bytes.size(), kSizedFromBytes + 8);
    EXPECT_LE(request.SpaceUsedLong(), kCheapBytes);
    EXPECT_LE(*SizeOf(bytes), kCheapBytes);
  }
  // Unknown empty groups, four bytes each.
  std::string groups;
  while (groups.size() + 4 <= kSizedFromBytes) groups += "\xbb\x3e\xbc\x3e";
  v1::SessionRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(groups));
  EXPECT_LE(parsed.SpaceUsedLong(), kCheapBytes);
  EXPECT_LE(*SizeOf(groups), kCheapBytes);
}

}  // namespace
}  // namespace sluice
