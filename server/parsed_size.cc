#include "sluice/server/parsed_size.h"

#include <string>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/message.h"
#include "google/protobuf/unknown_field_set.h"

namespace sluice {
namespace {

namespace pb = ::google::protobuf;
using pb::io::CodedInputStream;

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// What an element of a repeated field costs besides itself: its place in the field's room,
// which grows to twice what it holds.
constexpr uint64_t kPointerPlace = 2 * sizeof(void*);
// A string's heap bytes past its length (its terminator, an allocation's rounding).
constexpr uint64_t kStringExtra = 16;
// An unknown field: its entry in its set (room grown to twice), and its set's own object
// once it has one.
constexpr uint64_t kUnknownEntry = 2 * sizeof(pb::UnknownField);
constexpr uint64_t kUnknownSet = sizeof(pb::UnknownFieldSet) + 64;

// Skips an unknown field's value after its tag, adding what the unknown field set holds for it;
// false when the bytes are not well formed.
bool SkipUnknown(CodedInputStream* in, uint32_t tag, int depth, uint64_t* bytes) {
  *bytes += kUnknownEntry;
  switch (tag & 7) {
    case kVarint: {
      uint64_t value;
      return in->ReadVarint64(&value);
    }
    case kFixed64:
      return in->Skip(8);
    case kFixed32:
      return in->Skip(4);
    case kLengthDelimited: {
      uint32_t length;
      if (!in->ReadVarint32(&length)) return false;
      *bytes += sizeof(std::string) + length + kStringExtra;
      return in->Skip(static_cast<int>(length));
    }
    case kStartGroup: {
      if (depth >= ParsedSize::kMaxDepth) return false;
      *bytes += kUnknownSet;
      for (;;) {
        const uint32_t inner = in->ReadTag();
        if (inner == 0) return false;  // the group never ends
        if ((inner & 7) == kEndGroup) return (inner >> 3) == (tag >> 3);
        if (!SkipUnknown(in, inner, depth + 1, bytes)) return false;
      }
    }
    default:
      return false;  // an end without a start, or no wire type
  }
}

uint32_t ScalarBytes(pb::FieldDescriptor::CppType type) {
  switch (type) {
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return 1;
    case pb::FieldDescriptor::CPPTYPE_INT32:
    case pb::FieldDescriptor::CPPTYPE_UINT32:
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      return 4;
    default:
      return 8;
  }
}

uint32_t FixedWireBytes(pb::FieldDescriptor::Type type) {
  switch (type) {
    case pb::FieldDescriptor::TYPE_FIXED32:
    case pb::FieldDescriptor::TYPE_SFIXED32:
    case pb::FieldDescriptor::TYPE_FLOAT:
      return 4;
    case pb::FieldDescriptor::TYPE_FIXED64:
    case pb::FieldDescriptor::TYPE_SFIXED64:
    case pb::FieldDescriptor::TYPE_DOUBLE:
      return 8;
    default:
      return 0;
  }
}

}  // namespace

ParsedSize::ParsedSize(const pb::Descriptor* type) : root_(Plan(type)) {}

const ParsedSize::Type* ParsedSize::Plan(const pb::Descriptor* descriptor) {
  if (auto it = types_.find(descriptor); it != types_.end()) return it->second.get();
  Type* type = (types_[descriptor] = std::make_unique<Type>()).get();
  const pb::Message* prototype =
      pb::MessageFactory::generated_factory()->GetPrototype(descriptor);
  type->object_bytes = prototype->SpaceUsedLong();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const pb::FieldDescriptor* f = descriptor->field(i);
    Field field;
    field.repeated = f->is_repeated();
    switch (f->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_MESSAGE:
        field.kind = Field::kMessage;
        field.type = Plan(f->message_type());
        break;
      case pb::FieldDescriptor::CPPTYPE_STRING:
        field.kind = Field::kBytes;
        break;
      default:
        field.kind = Field::kScalar;
        field.element_bytes = ScalarBytes(f->cpp_type());
        field.fixed_wire_bytes = FixedWireBytes(f->type());
        break;
    }
    type->fields[f->number()] = field;
  }
  return type;
}

std::optional<uint64_t> ParsedSize::Of(pb::io::ZeroCopyInputStream* in) const {
  CodedInputStream coded(in);
  uint64_t bytes = root_->object_bytes;
  if (!Walk(&coded, *root_, 0, &bytes) || !coded.ConsumedEntireMessage()) return std::nullopt;
  return bytes;
}

bool ParsedSize::Walk(CodedInputStream* in, const Type& type, int depth,
                      uint64_t* bytes) const {
  bool unknown_seen = false;
  for (;;) {
    const uint32_t tag = in->ReadTag();
    if (tag == 0) return true;  // its end, or bytes that are not a tag: the caller asks which
    const uint32_t wire = tag & 7;
    const auto known = type.fields.find(static_cast<int>(tag >> 3));
    const Field* field = known == type.fields.end() ? nullptr : &known->second;
    if (field != nullptr && wire == kLengthDelimited) {
      uint32_t length;
      if (!in->ReadVarint32(&length)) return false;
      if (field->kind == Field::kMessage) {
        if (depth + 1 >= kMaxDepth) return false;
        *bytes += field->type->object_bytes + (field->repeated ? kPointerPlace : 0);
        const CodedInputStream::Limit limit = in->PushLimit(static_cast<int>(length));
        if (!Walk(in, *field->type, depth + 1, bytes) || !in->ConsumedEntireMessage()) {
          return false;
        }
        in->PopLimit(limit);
        continue;
      }
      if (field->kind == Field::kBytes) {
        // A string of its own, singular or not.
        *bytes += sizeof(std::string) + length + kStringExtra +
                  (field->repeated ? kPointerPlace : 0);
      } else if (field->repeated) {
        // Packed: at most a value a byte (varints), or a value every fixed width.
        const uint64_t values =
            field->fixed_wire_bytes == 0 ? length : length / field->fixed_wire_bytes;
        *bytes += 2 * values * field->element_bytes;
      } else {
        // A singular scalar sent length-delimited is kept as an unknown field.
        *bytes += kUnknownEntry + sizeof(std::string) + length + kStringExtra +
                  (unknown_seen ? 0 : kUnknownSet);
        unknown_seen = true;
      }
      if (!in->Skip(static_cast<int>(length))) return false;
      continue;
    }
    if (field != nullptr && field->kind == Field::kScalar &&
        (wire == kVarint || wire == kFixed64 || wire == kFixed32)) {
      // A value of its own (a repeated field's, unpacked, takes room; a singular one is in
      // its message's object), or an unknown field where the wire type is not the field's.
      const bool mismatched = (field->fixed_wire_bytes == 0) != (wire == kVarint);
      if (field->repeated && !mismatched) *bytes += 2 * uint64_t{field->element_bytes};
      if (mismatched) {
        *bytes += kUnknownEntry + (unknown_seen ? 0 : kUnknownSet);
        unknown_seen = true;
      }
      uint64_t value;
      if (wire == kVarint ? !in->ReadVarint64(&value) : !in->Skip(wire == kFixed64 ? 8 : 4)) {
        return false;
      }
      continue;
    }
    // Not a field of this type, or not in its wire type: kept as an unknown field.
    if (wire == kEndGroup) return false;
    if (!unknown_seen) *bytes += kUnknownSet;
    unknown_seen = true;
    if (!SkipUnknown(in, tag, depth, bytes)) return false;
  }
}

}  // namespace sluice
