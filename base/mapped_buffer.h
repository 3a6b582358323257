// Memory of its own from the system, for large buffers that live for one phase: a problem
// file's bytes, a compiled problem. Mapped at exactly its size and unmapped when it goes, so
// what it held is the system's again at once rather than kept by the allocator for later.
#ifndef SLUICE_BASE_MAPPED_BUFFER_H_
#define SLUICE_BASE_MAPPED_BUFFER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sluice {

class MappedBuffer {
 public:
  // `bytes` zeroed bytes (none for 0); ResourceExhausted if the system has no room.
  static absl::StatusOr<MappedBuffer> Allocate(size_t bytes);

  MappedBuffer() = default;
  MappedBuffer(MappedBuffer&& other) noexcept;
  MappedBuffer& operator=(MappedBuffer&& other) noexcept;
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  ~MappedBuffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Gives the pages wholly inside bytes [offset, offset + length) back to the system: the
  // buffer's size is unchanged, and those bytes read as zero from then on. A range past the
  // end is clipped.
  void Discard(size_t offset, size_t length);
  // The buffer as `T`s (size() / sizeof(T) of them); the mapping is page-aligned.
  template <class T>
  absl::Span<T> As() {
    return absl::Span<T>(reinterpret_cast<T*>(data_), size_ / sizeof(T));
  }
  template <class T>
  absl::Span<const T> As() const {
    return absl::Span<const T>(reinterpret_cast<const T*>(data_), size_ / sizeof(T));
  }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_BASE_MAPPED_BUFFER_H_
