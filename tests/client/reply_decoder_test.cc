// IncomingReply: a large data reply's bytes stay in the received slices, and every reply decodes
// to exactly what protobuf parses from the same bytes (or fails where protobuf fails), however
// the bytes are laid out or cut into slices.
#include "sluice/client/remote/reply_decoder.h"

#include <random>
#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "sluice/server/grpc/reply_codec.h"

namespace sluice {
namespace {

v1::SessionResponse DataReply(uint64_t id, uint64_t bytes, bool last) {
  v1::SessionResponse reply;
  reply.set_id(id);
  std::string& data = *reply.mutable_data()->mutable_data();
  data.resize(bytes);
  for (uint64_t i = 0; i < bytes; ++i) data[i] = static_cast<char>(i * 131 + 7);
  reply.mutable_data()->set_offset(5 << 20);
  reply.mutable_data()->set_total((5 << 20) + bytes + 17);
  if (last) {
    reply.set_last(true);
    reply.mutable_status()->set_message("done");
  }
  return reply;
}

// `wire` as a ByteBuffer of slices of `piece` bytes (0: one slice).
grpc::ByteBuffer Buffer(const std::string& wire, size_t piece = 0) {
  std::vector<grpc::Slice> slices;
  if (piece == 0) piece = wire.size() + 1;
  for (size_t at = 0; at < wire.size(); at += piece) {
    slices.emplace_back(wire.data() + at, std::min(piece, wire.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Flatten(grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// The decoded reply as one message, its data copied out of wherever it is.
v1::SessionResponse Whole(const IncomingReply& reply) {
  v1::SessionResponse whole = reply.message;
  if (reply.in_place()) {
    std::string data(reply.data_size(), '\0');
    reply.CopyData(0, data.size(), reinterpret_cast<uint8_t*>(data.data()));
    whole.mutable_data()->set_data(std::move(data));
  }
  return whole;
}

// Decodes `wire` in slices of `piece` bytes and checks the result against protobuf's parse.
void ExpectDecodesAsProtobuf(const std::string& wire, size_t piece, bool expect_in_place) {
  v1::SessionResponse parsed;
  const bool protobuf_ok = parsed.ParseFromString(wire);
  grpc::ByteBuffer buffer = Buffer(wire, piece);
  IncomingReply reply;
  const grpc::Status status = reply.Decode(&buffer);
  ASSERT_EQ(status.ok(), protobuf_ok) << status.error_message();
  if (!protobuf_ok) return;
  EXPECT_EQ(reply.in_place(), expect_in_place);
  EXPECT_EQ(reply.wire_bytes(), wire.size());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(Whole(reply), parsed));
}

TEST(ReplyDecoderTest, TheDaemonsLargeDataRepliesStayInTheirSlicesAndDecodeExactly) {
  for (const uint64_t bytes : {kDecodeInPlaceBytes, uint64_t{1} << 20, (uint64_t{1} << 20) + 3}) {
    for (const bool last : {false, true}) {
      v1::SessionResponse reply = DataReply(uint64_t{1} << 40, bytes, last);
      const v1::SessionResponse expected = reply;
      grpc::ByteBuffer wire = SerializeReply(reply);  // framing and data in separate slices
      IncomingReply decoded;
      ASSERT_TRUE(decoded.Decode(&wire).ok());
      EXPECT_TRUE(decoded.in_place()) << bytes;
      EXPECT_TRUE(decoded.message.data().data().empty()) << "the data was not copied";
      EXPECT_EQ(decoded.data_size(), bytes);
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(Whole(decoded), expected));
    }
  }
}

TEST(ReplyDecoderTest, ProtobufsOwnLayoutDecodesInPlaceInAnySlicing) {
  const std::string wire = DataReply(7, (1 << 20) + 5, true).SerializeAsString();
  for (const size_t piece : {size_t{0}, size_t{1}, size_t{3}, size_t{4096}, size_t{65537}}) {
    SCOPED_TRACE(piece);
    if (piece == 1) {
      // One byte per slice: decoded in place too, just slowly; a smaller reply keeps it quick.
      ExpectDecodesAsProtobuf(DataReply(7, kDecodeInPlaceBytes, true).SerializeAsString(), 1,
                              true);
      continue;
    }
    ExpectDecodesAsProtobuf(wire, piece, true);
  }
}

TEST(ReplyDecoderTest, CopiesAnyRangeOfTheDataAcrossSliceBoundaries) {
  const v1::SessionResponse reply = DataReply(3, 300000, false);
  const std::string& data = reply.data().data();
  grpc::ByteBuffer buffer = Buffer(reply.SerializeAsString(), 1000);
  IncomingReply decoded;
  ASSERT_TRUE(decoded.Decode(&buffer).ok());
  ASSERT_TRUE(decoded.in_place());
  std::mt19937_64 rng(17);
  for (int i = 0; i < 200; ++i) {
    const uint64_t from = rng() % data.size();
    const uint64_t n = rng() % (data.size() - from + 1);
    std::string got(n, '\0');
    decoded.CopyData(from, n, reinterpret_cast<uint8_t*>(got.data()));
    ASSERT_EQ(got, data.substr(from, n)) << from << " + " << n;
  }
}

TEST(ReplyDecoderTest, LayoutsItDoesNotTakeApartAreParsedWholeAsProtobufParsesThem) {
  const v1::SessionResponse big = DataReply(9, 100000, false);
  const std::string wire = big.SerializeAsString();
  // Two chunks: protobuf merges them (the second's data wins).
  v1::SessionResponse second;
  second.mutable_data()->set_data(std::string(70000, 'x'));
  ExpectDecodesAsProtobuf(wire + second.SerializeAsString(), 4096, false);
  // The data field twice inside one chunk.
  {
    v1::DataChunk twice = big.data();
    std::string inner = twice.SerializeAsString();
    v1::DataChunk extra;
    extra.set_data("later");
    inner += extra.SerializeAsString();
    v1::SessionResponse framing;
    framing.set_id(9);
    std::string outer = framing.SerializeAsString();
    outer.push_back(static_cast<char>((12 << 3) | 2));
    std::string length;
    for (uint64_t v = inner.size(); ; v >>= 7) {
      length.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
      if (v < 0x80) break;
    }
    ExpectDecodesAsProtobuf(outer + length + inner, 0, false);
  }
  // Another member of the oneof after the chunk replaces it.
  v1::SessionResponse ping;
  ping.mutable_ping()->set_payload("p");
  ExpectDecodesAsProtobuf(wire + ping.SerializeAsString(), 0, false);
  // A large reply with no data at all (a ping's payload).
  v1::SessionResponse pong;
  pong.set_id(2);
  pong.mutable_ping()->set_payload(std::string(200000, 'y'));
  ExpectDecodesAsProtobuf(pong.SerializeAsString(), 8192, false);
  // Small replies are parsed whole.
  ExpectDecodesAsProtobuf(DataReply(4, 100, true).SerializeAsString(), 0, false);
}

TEST(ReplyDecoderTest, DamagedRepliesDecodeAsProtobufParsesThemOrFailAsItFails) {
  v1::SessionResponse reply = DataReply(uint64_t{1} << 33, kDecodeInPlaceBytes + 100, true);
  reply.mutable_status()->set_code(3);
  grpc::ByteBuffer framed = SerializeReply(reply);
  const std::string wire = Flatten(framed);
  std::mt19937_64 rng(20261202);
  for (int i = 0; i < 600; ++i) {
    std::string damaged = wire;
    switch (i % 3) {
      case 0:  // cut short
        damaged.resize(rng() % damaged.size());
        break;
      case 1:  // a byte of the framing changed
        damaged[rng() % 48] = static_cast<char>(rng());
        break;
      default:  // bytes of the framing inserted
        damaged.insert(rng() % 48, std::string(1 + rng() % 4, static_cast<char>(rng())));
        break;
    }
    SCOPED_TRACE(i);
    v1::SessionResponse parsed;
    const bool protobuf_ok = parsed.ParseFromString(damaged);
    grpc::ByteBuffer buffer = Buffer(damaged, 1 + rng() % 9000);
    IncomingReply decoded;
    const grpc::Status status = decoded.Decode(&buffer);
    ASSERT_EQ(status.ok(), protobuf_ok);
    if (protobuf_ok) {
      ASSERT_TRUE(google::protobuf::util::MessageDifferencer::Equals(Whole(decoded), parsed));
    }
  }
}

}  // namespace
}  // namespace sluice
