// Serializing a session's replies for the wire. A data reply's bytes (a read's chunk) go out
// without being copied: the serialized message is its framing, encoded by protobuf, followed by
// a slice of the block the device copied into (or of the very string it copied into).
#ifndef SLUICE_SERVER_GRPC_REPLY_CODEC_H_
#define SLUICE_SERVER_GRPC_REPLY_CODEC_H_

#include <cstdint>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "sluice/server/ops/reply_block.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

// Data of at least this many bytes in a reply's own string is sent from that string; smaller
// replies are serialized whole (a copy that costs less than a second slice).
inline constexpr uint64_t kZeroCopyReplyBytes = uint64_t{64} << 10;

// `reply` in its wire form, as protobuf serializes it but for the order of fields (a DataChunk's
// `data` comes last, which every protobuf parser accepts). A data reply whose bytes are in
// `block` (its own data empty: see ReplyBlock) carries its piece of the block, which lives
// while the buffer does. Takes the bytes of `reply` (it is left cleared).
grpc::ByteBuffer SerializeReply(v1::SessionResponse& reply, const ReplyBlock& block = {});

// What `replies` hold while they wait to be sent, as the transfer budget counts them: their
// bytes on the wire, and kReplyOverheadBytes each.
uint64_t HeldBytes(const std::vector<grpc::ByteBuffer>& replies);

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_REPLY_CODEC_H_
