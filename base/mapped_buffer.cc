#include "sluice/base/mapped_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include <utility>

#include "absl/strings/str_format.h"

namespace sluice {

absl::StatusOr<MappedBuffer> MappedBuffer::Allocate(size_t bytes, bool huge_pages) {
  MappedBuffer buffer;
  if (bytes == 0) return buffer;
  void* data = huge_pages && bytes >= internal::kHugePageBytes ? internal::MapHugePages(bytes)
                                                                : internal::MapPages(bytes);
  if (data == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("no memory for a buffer of %d bytes", bytes));
  }
  buffer.data_ = static_cast<uint8_t*>(data);
  buffer.size_ = bytes;
  buffer.huge_ = huge_pages && bytes >= internal::kHugePageBytes;
  return buffer;
}

MappedBuffer::MappedBuffer(MappedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)),
      huge_(std::exchange(other.huge_, false)) {}

MappedBuffer& MappedBuffer::operator=(MappedBuffer&& other) noexcept {
  if (this != &other) {
    Unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    huge_ = std::exchange(other.huge_, false);
  }
  return *this;
}

void MappedBuffer::Unmap() {
  if (data_ == nullptr) return;
  if (huge_) {
    internal::UnmapHugePages(data_, size_);
  } else {
    munmap(data_, size_);
  }
}

void MappedBuffer::Discard(size_t offset, size_t length) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  offset = std::min(offset, size_);
  const size_t end = offset + std::min(length, size_ - offset);
  // The mapping is page-aligned, its last page all its own: a range to the end takes it.
  internal::DiscardWholePages(data_ + offset,
                              data_ + (end == size_ ? (size_ + page - 1) / page * page : end));
}

MappedBuffer::~MappedBuffer() { Unmap(); }

namespace internal {

void* MapPages(size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return data == MAP_FAILED ? nullptr : data;
}

namespace {
std::atomic<bool> huge_pages{true};

// The length MapHugePages maps for `bytes` (false if it does not fit in a size_t): up to whole
// huge pages where the part past the last boundary is half a huge page or more, else `bytes`.
bool HugePagesOf(size_t bytes, size_t* mapped) {
  if (bytes > SIZE_MAX - 2 * kHugePageBytes) return false;
  const size_t tail = bytes & (kHugePageBytes - 1);
  *mapped = tail >= kHugePageBytes / 2 ? bytes - tail + kHugePageBytes : bytes;
  return true;
}
}  // namespace

void* MapHugePages(size_t bytes) {
  size_t whole;
  if (!HugePagesOf(bytes, &whole)) return nullptr;
  // Mapped a huge page larger, then trimmed to an aligned start: a huge page needs one. The
  // mapping is committed, as calloc's large blocks are: a host that cannot back it refuses it
  // here, not at first touch.
  void* raw = mmap(nullptr, whole + kHugePageBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kHugePageBytes - 1) & ~uintptr_t{kHugePageBytes - 1};
  if (aligned > begin) munmap(raw, aligned - begin);
  const uintptr_t tail = begin + whole + kHugePageBytes - (aligned + whole);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + whole), tail);
  // Small pages are asked for too: a system with huge pages always on would give them.
  madvise(reinterpret_cast<void*>(aligned), whole,
          huge_pages.load(std::memory_order_relaxed) ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void SetHugePages(bool on) { huge_pages.store(on, std::memory_order_relaxed); }

void UnmapHugePages(void* data, size_t bytes) {
  size_t whole;
  if (data != nullptr && HugePagesOf(bytes, &whole)) munmap(data, whole);
}

void UnmapPages(void* data, size_t bytes) { munmap(data, bytes); }

bool PopulatePages(void* data, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  return bytes == 0 || madvise(data, bytes, MADV_POPULATE_WRITE) == 0;
#else
  return false;
#endif
}

void DiscardWholePages(const void* begin, const void* end) {
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  const uintptr_t last = reinterpret_cast<uintptr_t>(end) / page * page;
  if (first < last) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace internal

}  // namespace sluice
