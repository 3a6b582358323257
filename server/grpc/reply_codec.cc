#include "sluice/server/grpc/reply_codec.h"

#include <memory>
#include <string>
#include <utility>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "sluice/engine/transfer_budget.h"

namespace sluice {
namespace {

// A slice of `length` bytes at `data` that `owner` (taken) keeps alive: deleted, as a T, once
// gRPC lets go of the slice.
template <typename T>
grpc::Slice OwnedSlice(const void* data, size_t length, T* owner) {
  return grpc::Slice(grpc_slice_new_with_user_data(
                         const_cast<void*>(data), length,
                         [](void* owned) { delete static_cast<T*>(owned); }, owner),
                     grpc::Slice::STEAL_REF);
}

}  // namespace

grpc::ByteBuffer SerializeReply(v1::SessionResponse& reply, const ReplyBlock& block) {
  using google::protobuf::io::CodedOutputStream;
  using google::protobuf::internal::WireFormatLite;
  const absl::Span<const uint8_t> piece =
      reply.has_data() && reply.data().data().empty() ? block.PieceAt(reply.data().offset())
                                                      : absl::Span<const uint8_t>();
  if (piece.empty() && (!reply.has_data() || reply.data().data().size() < kZeroCopyReplyBytes)) {
    grpc::ByteBuffer buffer;
    bool own = false;
    grpc::SerializationTraits<v1::SessionResponse>::Serialize(reply, &buffer, &own);
    v1::SessionResponse().Swap(&reply);  // its bytes go now
    return buffer;
  }
  grpc::Slice data;
  if (!piece.empty()) {
    data = OwnedSlice(piece.data(), piece.size(), new std::shared_ptr<uint8_t[]>(block.owner()));
  } else {
    std::string* payload = reply.mutable_data()->release_data();
    data = OwnedSlice(payload->data(), payload->size(), payload);
  }
  v1::DataChunk rest;  // the chunk's other fields
  rest.Swap(reply.mutable_data());
  reply.clear_result();
  // The framing: the reply's fields (id, last, status), the chunk's tag and length, its other
  // fields (offset, total), and the data's tag and length, in a slice of its own (inline in
  // the slice itself where short enough).
  const size_t data_head =
      WireFormatLite::TagSize(v1::DataChunk::kDataFieldNumber, WireFormatLite::TYPE_BYTES) +
      CodedOutputStream::VarintSize64(data.size());
  const size_t chunk_bytes = rest.ByteSizeLong() + data_head + data.size();
  const size_t head_bytes =
      reply.ByteSizeLong() +
      WireFormatLite::TagSize(v1::SessionResponse::kDataFieldNumber,
                              WireFormatLite::TYPE_MESSAGE) +
      CodedOutputStream::VarintSize64(chunk_bytes) + rest.GetCachedSize() + data_head;
  grpc::Slice head(head_bytes);
  uint8_t* at = const_cast<uint8_t*>(head.begin());
  at = reply.SerializeWithCachedSizesToArray(at);
  at = WireFormatLite::WriteTagToArray(v1::SessionResponse::kDataFieldNumber,
                                       WireFormatLite::WIRETYPE_LENGTH_DELIMITED, at);
  at = CodedOutputStream::WriteVarint64ToArray(chunk_bytes, at);
  at = rest.SerializeWithCachedSizesToArray(at);
  at = WireFormatLite::WriteTagToArray(v1::DataChunk::kDataFieldNumber,
                                       WireFormatLite::WIRETYPE_LENGTH_DELIMITED, at);
  at = CodedOutputStream::WriteVarint64ToArray(data.size(), at);
  reply.Clear();
  grpc::Slice slices[2] = {std::move(head), std::move(data)};
  return grpc::ByteBuffer(slices, 2);
}

uint64_t HeldBytes(const std::vector<grpc::ByteBuffer>& replies) {
  uint64_t bytes = 0;
  for (const grpc::ByteBuffer& reply : replies) bytes += reply.Length() + kReplyOverheadBytes;
  return bytes;
}

}  // namespace sluice
