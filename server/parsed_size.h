// What a message holds once parsed, read from its wire form without parsing it. A message can
// take many times its size in memory once parsed (an empty element of a repeated message field
// is 2 bytes on the wire and an object of its own parsed), so the daemon reserves what a large
// request will hold before it parses it, and refuses one its client's share has no room for
// unparsed (server/grpc/session_reactor.cc).
#ifndef SLUICE_SERVER_PARSED_SIZE_H_
#define SLUICE_SERVER_PARSED_SIZE_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream.h"

namespace sluice {

class ParsedSize {
 public:
  // For messages of `type` (and every type it reaches), whose generated classes are linked in.
  explicit ParsedSize(const google::protobuf::Descriptor* type);

  // A bound from above of what the message in `in` (all of it) holds once parsed, as
  // SpaceUsedLong() counts it: its objects, the room of its repeated fields (each grown to
  // twice what it holds), its strings' bytes and its unknown fields. nullopt when the bytes are
  // not a well-formed message or nest deeper than kMaxDepth: bytes the parse refuses too.
  std::optional<uint64_t> Of(google::protobuf::io::ZeroCopyInputStream* in) const;

  // How deep messages and groups may nest here: deeper than protobuf's parse allows (100), so
  // that every message it parses has a size here.
  static constexpr int kMaxDepth = 128;

 private:
  struct Type;
  struct Field {
    enum Kind { kMessage, kBytes, kScalar } kind = kScalar;
    bool repeated = false;
    uint32_t element_bytes = 0;  // a scalar's in memory
    uint32_t fixed_wire_bytes = 0;  // 4 or 8 for fixed-width scalars, 0 for varints
    const Type* type = nullptr;  // a message's
  };
  struct Type {
    uint64_t object_bytes = 0;
    absl::flat_hash_map<int, Field> fields;
  };

  const Type* Plan(const google::protobuf::Descriptor* type);
  bool Walk(google::protobuf::io::CodedInputStream* in, const Type& type, int depth,
            uint64_t* bytes) const;

  absl::flat_hash_map<const google::protobuf::Descriptor*, std::unique_ptr<Type>> types_;
  const Type* root_;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_PARSED_SIZE_H_
