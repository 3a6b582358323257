// Serializing a session's replies for the wire. A data reply's bytes (a read's chunk) go out
// without being copied: the serialized message is its framing, encoded by protobuf, followed by
// a slice that owns the very string the device copied into.
#ifndef SLUICE_SERVER_GRPC_REPLY_CODEC_H_
#define SLUICE_SERVER_GRPC_REPLY_CODEC_H_

#include <cstdint>

#include "grpcpp/grpcpp.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

// Data of at least this many bytes is sent from its own string; smaller replies are
// serialized whole (a copy that costs less than a second slice).
inline constexpr uint64_t kZeroCopyReplyBytes = uint64_t{64} << 10;

// `reply` in its wire form, as protobuf serializes it but for the order of fields (a DataChunk's
// `data` comes last, which every protobuf parser accepts). Takes the bytes of `reply` (it is
// left cleared).
grpc::ByteBuffer SerializeReply(v1::SessionResponse& reply);

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_REPLY_CODEC_H_
