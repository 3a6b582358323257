#include "sluice/client/remote/reply_decoder.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "google/protobuf/io/coded_stream.h"
#include "grpcpp/support/proto_buffer_reader.h"

namespace sluice {
namespace {

// Calls fn(pointer, length) for the pieces of bytes [from, from + n) of the slices' concatenation.
template <class Fn>
void ForEachPiece(const std::vector<grpc::Slice>& slices, uint64_t from, uint64_t n, Fn&& fn) {
  for (const grpc::Slice& slice : slices) {
    if (n == 0) return;
    if (from >= slice.size()) {
      from -= slice.size();
      continue;
    }
    const uint64_t take = std::min<uint64_t>(n, slice.size() - from);
    fn(slice.begin() + from, take);
    n -= take;
    from = 0;
  }
}

// Reads a length, refusing one that protobuf refuses (none passes 2 GiB).
bool ReadLength(google::protobuf::io::CodedInputStream& in, uint32_t* length) {
  uint64_t n = 0;
  if (!in.ReadVarint64(&n) || n > static_cast<uint64_t>(INT32_MAX)) return false;
  *length = static_cast<uint32_t>(n);
  return true;
}

// Skips the value of a field with `tag`. Groups are not taken apart (false).
bool SkipValue(google::protobuf::io::CodedInputStream& in, uint32_t tag) {
  uint64_t n = 0;
  uint32_t length = 0;
  switch (tag & 7) {
    case 0: return in.ReadVarint64(&n);
    case 1: return in.Skip(8);
    case 2: return ReadLength(in, &length) && in.Skip(static_cast<int>(length));
    case 5: return in.Skip(4);
    default: return false;
  }
}

}  // namespace

uint64_t IncomingReply::data_size() const {
  return in_place_ ? data_size_ : message.data().data().size();
}

void IncomingReply::CopyData(uint64_t from, uint64_t n, uint8_t* to) const {
  if (!in_place_) {
    std::memcpy(to, message.data().data().data() + from, n);
    return;
  }
  ForEachPiece(slices_, data_begin_ + from, n, [&](const uint8_t* piece, uint64_t length) {
    std::memcpy(to, piece, length);
    to += length;
  });
}

grpc::Status IncomingReply::Decode(grpc::ByteBuffer* buffer) {
  wire_bytes_ = buffer->Length();
  in_place_ = false;
  slices_.clear();
  message.Clear();
  if (wire_bytes_ >= kDecodeInPlaceBytes && buffer->Dump(&slices_).ok() && TakeApart(buffer)) {
    buffer->Clear();
    return grpc::Status::OK;
  }
  slices_.clear();
  message.Clear();
  return grpc::SerializationTraits<v1::SessionResponse>::Deserialize(buffer, &message);
}

bool IncomingReply::TakeApart(grpc::ByteBuffer* buffer) {
  const google::protobuf::Descriptor* const reply_type = v1::SessionResponse::descriptor();
  grpc::ProtoBufferReader stream(buffer);  // reads the buffer, leaving it as it is
  if (!stream.status().ok()) return false;
  google::protobuf::io::CodedInputStream in(&stream);
  std::string rest, chunk_rest;  // the reply less its chunk; the chunk less its data
  const auto keep = [&](uint64_t from, std::string* into) {
    ForEachPiece(slices_, from, in.CurrentPosition() - from,
                 [into](const uint8_t* piece, uint64_t length) {
                   into->append(reinterpret_cast<const char*>(piece), length);
                 });
  };
  bool chunk = false, data = false;
  for (;;) {
    const uint64_t field_start = in.CurrentPosition();
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {  // the end, or field 0 or a broken tag
      if (in.ConsumedEntireMessage()) break;
      return false;
    }
    const uint32_t field = tag >> 3;
    if (field == v1::SessionResponse::kDataFieldNumber) {
      // A second chunk would merge into the first: protobuf's parse does that.
      uint32_t length = 0;
      if ((tag & 7) != 2 || chunk || !ReadLength(in, &length)) return false;
      chunk = true;
      const auto limit = in.PushLimit(static_cast<int>(length));
      while (in.BytesUntilLimit() > 0) {
        const uint64_t inner_start = in.CurrentPosition();
        const uint32_t inner = in.ReadTag();
        if (inner == 0) return false;
        if ((inner >> 3) == v1::DataChunk::kDataFieldNumber) {
          // The data twice: the last one counts, as protobuf parses it.
          if ((inner & 7) != 2 || data || !ReadLength(in, &length)) return false;
          data_begin_ = in.CurrentPosition();
          data_size_ = length;
          if (!in.Skip(static_cast<int>(length))) return false;
          data = true;
        } else {
          if (!SkipValue(in, inner)) return false;
          keep(inner_start, &chunk_rest);
        }
      }
      in.PopLimit(limit);
      continue;
    }
    const google::protobuf::FieldDescriptor* known =
        reply_type->FindFieldByNumber(static_cast<int>(field));
    // Another member of the oneof would replace the chunk.
    if (known != nullptr && known->containing_oneof() != nullptr) return false;
    if (!SkipValue(in, tag)) return false;
    keep(field_start, &rest);
  }
  if (!data || !message.ParseFromString(rest) ||
      !message.mutable_data()->ParseFromString(chunk_rest)) {
    return false;
  }
  in_place_ = true;
  return true;
}

}  // namespace sluice
