#include "client/remote/reply_decoder.h"

#include <algorithm>
#include <cstring>
#include <string>

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

// Reads the wire format forwards across slices.
class SliceReader {
 public:
  explicit SliceReader(const std::vector<grpc::Slice>& slices) : slices_(slices) {
    for (const grpc::Slice& slice : slices) size_ += slice.size();
  }

  uint64_t position() const { return position_; }
  uint64_t size() const { return size_; }

  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte;
      if (!ReadByte(&byte)) return false;
      *value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;  // more than ten bytes
  }

  // Moves `n` bytes on, staying within `limit`.
  bool Skip(uint64_t n, uint64_t limit) {
    if (n > limit - position_) return false;
    position_ += n;
    while (slice_ < slices_.size() && n >= slices_[slice_].size() - offset_) {
      n -= slices_[slice_].size() - offset_;
      ++slice_;
      offset_ = 0;
    }
    offset_ += n;
    return true;
  }

  // Skips the value of a field with `tag`, staying within `limit`. Groups are not taken apart.
  bool SkipValue(uint64_t tag, uint64_t limit) {
    uint64_t n = 0;
    switch (tag & 7) {
      case 0: return ReadVarint(&n) && position_ <= limit;
      case 1: return Skip(8, limit);
      case 2: return ReadVarint(&n) && position_ <= limit && Skip(n, limit);
      case 5: return Skip(4, limit);
      default: return false;
    }
  }

 private:
  bool ReadByte(uint8_t* byte) {
    while (slice_ < slices_.size() && offset_ == slices_[slice_].size()) {
      ++slice_;
      offset_ = 0;
    }
    if (slice_ == slices_.size()) return false;
    *byte = slices_[slice_].begin()[offset_++];
    ++position_;
    return true;
  }

  const std::vector<grpc::Slice>& slices_;
  uint64_t size_ = 0;
  uint64_t position_ = 0;
  size_t slice_ = 0;
  uint64_t offset_ = 0;
};

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
  message.Clear();
  in_place_ = false;
  slices_.clear();
  wire_bytes_ = buffer->Length();
  if (wire_bytes_ >= kDecodeInPlaceBytes && buffer->Dump(&slices_).ok() && TakeApart()) {
    buffer->Clear();
    return grpc::Status::OK;
  }
  slices_.clear();
  in_place_ = false;
  message.Clear();
  return grpc::SerializationTraits<v1::SessionResponse>::Deserialize(buffer, &message);
}

bool IncomingReply::TakeApart() {
  const google::protobuf::Descriptor* const reply_type = v1::SessionResponse::descriptor();
  SliceReader reader(slices_);
  const uint64_t size = reader.size();
  std::string rest, chunk_rest;  // the reply less its chunk; the chunk less its data
  const auto keep = [&](uint64_t from, std::string* into) {
    ForEachPiece(slices_, from, reader.position() - from,
                 [into](const uint8_t* piece, uint64_t length) {
                   into->append(reinterpret_cast<const char*>(piece), length);
                 });
  };
  bool chunk = false, data = false;
  while (reader.position() < size) {
    const uint64_t field_start = reader.position();
    uint64_t tag = 0;
    if (!reader.ReadVarint(&tag)) return false;
    const uint64_t field = tag >> 3;
    if (field == v1::SessionResponse::kDataFieldNumber) {
      // A second chunk would merge into the first: protobuf's parse does that.
      uint64_t length = 0;
      if ((tag & 7) != 2 || chunk || !reader.ReadVarint(&length) ||
          length > size - reader.position()) {
        return false;
      }
      chunk = true;
      const uint64_t end = reader.position() + length;
      while (reader.position() < end) {
        const uint64_t inner_start = reader.position();
        uint64_t inner = 0;
        if (!reader.ReadVarint(&inner) || reader.position() > end) return false;
        if ((inner >> 3) == v1::DataChunk::kDataFieldNumber && (inner & 7) == 2 && !data) {
          uint64_t bytes = 0;
          if (!reader.ReadVarint(&bytes) || reader.position() > end) return false;
          data_begin_ = reader.position();
          data_size_ = bytes;
          if (!reader.Skip(bytes, end)) return false;
          data = true;
        } else if ((inner >> 3) == v1::DataChunk::kDataFieldNumber) {
          return false;  // the data twice: the last one counts, as protobuf parses it
        } else {
          if (!reader.SkipValue(inner, end)) return false;
          keep(inner_start, &chunk_rest);
        }
      }
      continue;
    }
    const google::protobuf::FieldDescriptor* known =
        field > 0 && field <= 0x1fffffff ? reply_type->FindFieldByNumber(static_cast<int>(field))
                                         : nullptr;
    // Another member of the oneof would replace the chunk.
    if (field == 0 || (known != nullptr && known->containing_oneof() != nullptr)) return false;
    if (!reader.SkipValue(tag, size)) return false;
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
