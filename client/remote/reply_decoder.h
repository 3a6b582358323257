// Decoding the session's replies as they arrive. A large data reply (a read's chunk) is not
// parsed into a message whole: its bytes stay in the slices gRPC received them in, and the
// stream copies them from there straight into the caller's vectors (one copy, not two). The
// rest of the reply is parsed by protobuf. Any encoding protobuf accepts decodes: one this
// decoder does not take apart (a chunk's data field twice, another member of the reply's
// oneof) is parsed whole, as protobuf would. Private to the client library.
#ifndef SLUICE_CLIENT_REMOTE_REPLY_DECODER_H_
#define SLUICE_CLIENT_REMOTE_REPLY_DECODER_H_

#include <cstdint>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

// Replies of at least this many bytes are taken apart; smaller ones are parsed whole.
inline constexpr uint64_t kDecodeInPlaceBytes = uint64_t{64} << 10;

// A reply as read from the stream.
class IncomingReply {
 public:
  // Everything but the data of a chunk decoded in place (then message.data().data() is empty).
  v1::SessionResponse message;

  // The bytes of the reply's data chunk, wherever they are.
  uint64_t data_size() const;
  // Copies the chunk's data [from, from + n) to `to`; from + n <= data_size().
  void CopyData(uint64_t from, uint64_t n, uint8_t* to) const;
  // Whether the chunk's data stayed in the received slices.
  bool in_place() const { return in_place_; }
  // The reply's size on the wire.
  uint64_t wire_bytes() const { return wire_bytes_; }

  // Decodes `buffer` (which is left empty). InvalidArgument when it is not a SessionResponse.
  grpc::Status Decode(grpc::ByteBuffer* buffer);

 private:
  // Parses all of `buffer` (slices_ holds it too) but the chunk's data, which it locates;
  // false (anything decoded left for the caller to clear) where the reply is not laid out as
  // one chunk with its data once.
  bool TakeApart(grpc::ByteBuffer* buffer);

  bool in_place_ = false;
  uint64_t wire_bytes_ = 0;
  std::vector<grpc::Slice> slices_;  // the whole reply as received
  uint64_t data_begin_ = 0;          // where the data starts, in the slices' concatenation
  uint64_t data_size_ = 0;
};

}  // namespace sluice

namespace grpc {

// gRPC reads replies into IncomingReply (the client's stream is typed with it); nothing sends one.
template <>
class SerializationTraits<sluice::IncomingReply, void> {
 public:
  static Status Serialize(const sluice::IncomingReply&, ByteBuffer*, bool*) {
    return Status(StatusCode::UNIMPLEMENTED, "an IncomingReply is never sent");
  }
  static Status Deserialize(ByteBuffer* buffer, sluice::IncomingReply* reply) {
    return reply->Decode(buffer);
  }
};

}  // namespace grpc

#endif  // SLUICE_CLIENT_REMOTE_REPLY_DECODER_H_
