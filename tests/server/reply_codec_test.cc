// SerializeReply: what goes on the wire parses back to the reply it was made from, whether the
// data is framed around its own string, sent from a read's block, or serialized whole.
#include "sluice/server/grpc/reply_codec.h"

#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "sluice/engine/transfer_budget.h"

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

// A read's replies whose bytes are in a block (their own data empty): each goes out as its
// framing and its piece of the block, whatever its size, and parses back to the reply with
// that piece as its data; the block lives as long as a reply's buffer, not its maker's.
TEST(ReplyCodecTest, RepliesFromABlockCarryTheirPieceOfItAndKeepItAlive) {
  constexpr uint64_t kBase = 3 << 20;
  constexpr uint64_t kChunk = 4096;
  constexpr uint64_t kLength = 2 * kChunk + 5;  // two whole chunks and a short one
  std::vector<grpc::ByteBuffer> wire;
  std::string bytes;
  {
    ReplyBlock block(kBase, kLength, kChunk);
    for (uint64_t i = 0; i < kLength; ++i) block.bytes()[i] = static_cast<uint8_t>(i * 131 + 7);
    bytes.assign(reinterpret_cast<const char*>(block.bytes().data()), kLength);
    EXPECT_TRUE(block.PieceAt(kBase + 1).empty()) << "not where a reply begins";
    EXPECT_TRUE(block.PieceAt(kBase + kLength).empty()) << "past the block";
    for (uint64_t at = 0; at < kLength; at += kChunk) {
      v1::SessionResponse reply;
      reply.set_id(7);
      reply.mutable_data()->set_offset(kBase + at);
      reply.mutable_data()->set_total(kBase + kLength);
      if (at + kChunk >= kLength) {
        reply.set_last(true);
        reply.mutable_status();
      }
      wire.push_back(SerializeReply(reply, block));
      EXPECT_EQ(reply.ByteSizeLong(), 0u) << "the reply's bytes were taken";
    }
  }  // the block's maker lets go of it
  ASSERT_EQ(wire.size(), 3u);
  EXPECT_EQ(HeldBytes(wire), wire[0].Length() + wire[1].Length() + wire[2].Length() +
                                 3 * kReplyOverheadBytes);
  std::string got;
  for (size_t i = 0; i < wire.size(); ++i) {
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(wire[i].Dump(&slices).ok());
    EXPECT_EQ(slices.size(), 2u) << "the framing, then the piece";
    v1::SessionResponse parsed;
    ASSERT_TRUE(
        grpc::SerializationTraits<v1::SessionResponse>::Deserialize(&wire[i], &parsed).ok());
    EXPECT_EQ(parsed.id(), 7u);
    EXPECT_EQ(parsed.data().offset(), kBase + i * kChunk);
    EXPECT_EQ(parsed.data().total(), kBase + kLength);
    EXPECT_EQ(parsed.last(), i == 2);
    EXPECT_EQ(parsed.has_status(), i == 2);
    got += parsed.data().data();
  }
  EXPECT_TRUE(got == bytes);
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
