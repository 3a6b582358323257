// SerializeReply: what goes on the wire parses back to the reply it was made from, whether the
// data is framed around its own string or serialized whole.
#include "sluice/server/grpc/reply_codec.h"

#include <string>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

v1::SessionResponse DataReply(uint64_t id, uint64_t bytes, uint64_t offset, bool last) {
  v1::SessionResponse reply;
  reply.set_id(id);
  std::string& data = *reply.mutable_data()->mutable_data();
  data.resize(bytes);
  for (uint64_t i = 0; i < bytes; ++i) data[i] = static_cast<char>(i * 131 + 7);
  reply.mutable_data()->set_offset(offset);
  reply.mutable_data()->set_total(offset + bytes + 99);
  if (last) {
    reply.set_last(true);
    reply.mutable_status();
  }
  return reply;
}

v1::SessionResponse RoundTrip(v1::SessionResponse reply, grpc::ByteBuffer* wire = nullptr) {
  grpc::ByteBuffer buffer = SerializeReply(reply);
  EXPECT_EQ(reply.ByteSizeLong(), 0u) << "the reply's bytes were taken";
  if (wire != nullptr) *wire = buffer;
  v1::SessionResponse parsed;
  EXPECT_TRUE(grpc::SerializationTraits<v1::SessionResponse>::Deserialize(&buffer, &parsed).ok());
  return parsed;
}

TEST(ReplyCodecTest, LargeDataIsFramedAroundItsOwnStringAndParsesBackTheSame) {
  for (const uint64_t bytes : {kZeroCopyReplyBytes, kZeroCopyReplyBytes + 1, uint64_t{1} << 20,
                               (uint64_t{1} << 20) + 3}) {
    for (const bool last : {false, true}) {
      const v1::SessionResponse reply = DataReply(uint64_t{1} << 40, bytes, 3 << 20, last);
      grpc::ByteBuffer wire;
      const v1::SessionResponse parsed = RoundTrip(reply, &wire);
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, reply))
          << bytes << " bytes, last " << last;
      EXPECT_EQ(wire.Length(), reply.ByteSizeLong()) << "the same size as protobuf's own";
      std::vector<grpc::Slice> slices;
      ASSERT_TRUE(wire.Dump(&slices).ok());
      EXPECT_EQ(slices.size(), 2u) << "the framing, then the data itself";
    }
  }
}

TEST(ReplyCodecTest, SmallRepliesAreSerializedWhole) {
  v1::SessionResponse status;
  status.set_id(9);
  status.set_last(true);
  status.mutable_status()->set_code(5);
  status.mutable_status()->set_message("no buffer");
  for (const v1::SessionResponse& reply :
       {status, DataReply(3, 0, 0, true), DataReply(4, kZeroCopyReplyBytes - 1, 0, false)}) {
    grpc::ByteBuffer wire;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(RoundTrip(reply, &wire), reply));
    std::string expected;
    ASSERT_TRUE(reply.SerializeToString(&expected));
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(wire.Dump(&slices).ok());
    std::string got;
    for (const grpc::Slice& s : slices) got.append(reinterpret_cast<const char*>(s.begin()), s.size());
    EXPECT_EQ(got, expected) << "byte for byte what protobuf writes";
  }
}

}  // namespace
}  // namespace sluice
