#include "sluice/server/grpc/reply_codec.h"

#include <string>
#include <utility>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"

namespace sluice {

grpc::ByteBuffer SerializeReply(v1::SessionResponse& reply) {
  using google::protobuf::internal::WireFormatLite;
  if (!reply.has_data() || reply.data().data().size() < kZeroCopyReplyBytes) {
    grpc::ByteBuffer buffer;
    bool own = false;
    grpc::SerializationTraits<v1::SessionResponse>::Serialize(reply, &buffer, &own);
    v1::SessionResponse().Swap(&reply);  // its bytes go now
    return buffer;
  }
  std::string* payload = reply.mutable_data()->release_data();
  v1::DataChunk rest;  // the chunk's other fields
  rest.Swap(reply.mutable_data());
  reply.clear_result();
  const size_t data_head =
      WireFormatLite::TagSize(v1::DataChunk::kDataFieldNumber, WireFormatLite::TYPE_BYTES) +
      google::protobuf::io::CodedOutputStream::VarintSize64(payload->size());
  const size_t chunk_bytes = rest.ByteSizeLong() + data_head + payload->size();
  std::string head;
  {
    google::protobuf::io::StringOutputStream raw(&head);
    google::protobuf::io::CodedOutputStream out(&raw);
    reply.SerializeToCodedStream(&out);  // id, last, status
    WireFormatLite::WriteTag(v1::SessionResponse::kDataFieldNumber,
                             WireFormatLite::WIRETYPE_LENGTH_DELIMITED, &out);
    out.WriteVarint64(chunk_bytes);
    rest.SerializeToCodedStream(&out);  // offset, total
    WireFormatLite::WriteTag(v1::DataChunk::kDataFieldNumber,
                             WireFormatLite::WIRETYPE_LENGTH_DELIMITED, &out);
    out.WriteVarint64(payload->size());
  }
  reply.Clear();
  grpc::Slice slices[2] = {
      grpc::Slice(head),
      grpc::Slice(grpc_slice_new_with_user_data(
                      payload->data(), payload->size(),
                      [](void* owned) { delete static_cast<std::string*>(owned); }, payload),
                  grpc::Slice::STEAL_REF)};
  return grpc::ByteBuffer(slices, 2);
}

}  // namespace sluice
