// Memory of its own from the system, for large buffers that live for one phase: a problem
// file's bytes, a compiled problem. Mapped at exactly its size and unmapped when it goes, so
// what it held is the system's again at once rather than kept by the allocator for later.
#ifndef SLUICE_BASE_MAPPED_BUFFER_H_
#define SLUICE_BASE_MAPPED_BUFFER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sluice {

class MappedBuffer {
 public:
  // `bytes` zeroed bytes (none for 0); ResourceExhausted if the system has no room. With
  // `huge_pages`, for a buffer written whole (a compiled problem), the mapping asks for
  // transparent huge pages (internal::MapHugePages, unless the process turned them off:
  // internal::SetHugePages): writing it takes a fault every 2 MiB rather than every 4 KiB.
  static absl::StatusOr<MappedBuffer> Allocate(size_t bytes, bool huge_pages = false);

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
  void Unmap();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool huge_ = false;  // mapped by internal::MapHugePages
};

namespace internal {
// A mapping of `bytes` zeroed bytes, or nullptr if the system has no room.
void* MapPages(size_t bytes);
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
// As MapPages, starting at a huge page's boundary and asking for transparent huge pages
// (advice only: where the system has them off, it maps small pages). Memory written whole
// takes one fault every 2 MiB where it would take 512; memory touched here and there holds a
// whole huge page for each touch, so it suits buffers that are written whole. Where the part
// past the last huge page boundary is half a huge page or more, the mapping runs on to the
// next boundary, so that this part is a huge page too (past the last boundary it could only
// be small pages, a fault each): at most half a huge page more is held for 256 faults or more
// saved. Unmapped by UnmapHugePages(data, bytes).
void* MapHugePages(size_t bytes);
void UnmapHugePages(void* data, size_t bytes);
// Whether MapHugePages asks for huge pages: true from the start. A process that holds its
// arrays for a short while, and would rather hold fewer bytes than take fewer faults, turns it
// off before it maps any (a client of a daemon: its problem is parsed, compiled and sent, and
// an array holds up to a partly written huge page more than it uses). MapHugePages then maps
// as before, huge-page aligned, and asks for small pages (MADV_NOHUGEPAGE).
void SetHugePages(bool on);
void UnmapPages(void* data, size_t bytes);
// Backs the pages of [data, data + bytes), a mapping's, now and writable, in one call to the
// system (MADV_POPULATE_WRITE), rather than at each page's first write: for memory about to be
// written whole. A fault costs the system's entry and exit for each page, which a virtual
// machine makes dear (on the VM of docs/benchmarks.md about 11 µs a 4 KiB page faulted, 0.2 µs
// a page populated). Advice: false where the system did not (before Linux 5.14, or short of
// memory), and the pages then fault in as they are written.
bool PopulatePages(void* data, size_t bytes);
// Gives the pages wholly inside [begin, end) of a mapping back to the system.
void DiscardWholePages(const void* begin, const void* end);
}  // namespace internal

// An allocator whose large arrays (kMinBytes or more) are memory of their own, a mapping each
// (smaller ones come from the heap): parts of such an array can be given back to the system
// while the rest is in use (DiscardElements), and all of it goes back when it is freed. Arrays
// of a huge page and more are mapped by internal::MapHugePages (huge pages unless the process
// turned them off: internal::SetHugePages): they are a reader's, a solution's and an answer's
// arrays, filled front to back or whole, so an array holds at most one partly written huge
// page more than with small pages (a vector's room past its size is never touched), and
// filling one takes a fault every 2 MiB rather than every 4 KiB. On a host whose faults are
// slow that is most of the cost of reading a problem into fresh memory.
template <typename T>
class PageAllocator {
 public:
  using value_type = T;
  static constexpr size_t kMinBytes = size_t{1} << 20;

  PageAllocator() = default;
  template <typename U>
  PageAllocator(const PageAllocator<U>&) noexcept {}  // NOLINT: allocators convert implicitly

  T* allocate(size_t n) {
    if (n > ~size_t{0} / sizeof(T)) throw std::bad_array_new_length();
    if (n * sizeof(T) < kMinBytes) return std::allocator<T>().allocate(n);
    void* data = n * sizeof(T) >= internal::kHugePageBytes
                     ? internal::MapHugePages(n * sizeof(T))
                     : internal::MapPages(n * sizeof(T));
    if (data == nullptr) throw std::bad_alloc();
    return static_cast<T*>(data);
  }
  void deallocate(T* data, size_t n) noexcept {
    if (n * sizeof(T) < kMinBytes) {
      std::allocator<T>().deallocate(data, n);
    } else if (n * sizeof(T) >= internal::kHugePageBytes) {
      internal::UnmapHugePages(data, n * sizeof(T));
    } else {
      internal::UnmapPages(data, n * sizeof(T));
    }
  }
  template <typename U>
  bool operator==(const PageAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using PageVector = std::vector<T, PageAllocator<T>>;

// Makes room in `v` for `need` elements, as push_back would, except that past a sixteenth of a
// huge page's worth the room goes straight to a huge page's: the doubling steps between would
// each be fresh memory touched a small page at a time. For arrays that grow large as a rule
// (a reader's), where the room is soon used.
template <typename T>
void ReserveHugeRoom(PageVector<T>& v, size_t need) {
  constexpr size_t kHugeRoom = (internal::kHugePageBytes + sizeof(T) - 1) / sizeof(T);
  if (need > v.capacity() && need > kHugeRoom / 16 && v.capacity() < kHugeRoom) {
    v.reserve(std::max(need, kHugeRoom));
  }
}

// Gives back the whole pages that elements [first, last) of `v` lie in, where `v`'s array is a
// mapping of its own (nothing otherwise): they read as zero from then on, and the elements
// around them keep their values.
template <typename T>
void DiscardElements(PageVector<T>& v, size_t first, size_t last) {
  if (v.capacity() * sizeof(T) < PageAllocator<T>::kMinBytes || first >= last) return;
  internal::DiscardWholePages(v.data() + first, v.data() + last);
}

}  // namespace sluice

#endif  // SLUICE_BASE_MAPPED_BUFFER_H_
