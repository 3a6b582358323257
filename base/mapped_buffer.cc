#include "sluice/base/mapped_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include <utility>

#include "absl/strings/str_format.h"

namespace sluice {

absl::StatusOr<MappedBuffer> MappedBuffer::Allocate(size_t bytes) {
  MappedBuffer buffer;
  if (bytes == 0) return buffer;
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("no memory for a buffer of %d bytes", bytes));
  }
  buffer.data_ = static_cast<uint8_t*>(data);
  buffer.size_ = bytes;
  return buffer;
}

MappedBuffer::MappedBuffer(MappedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedBuffer& MappedBuffer::operator=(MappedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedBuffer::Discard(size_t offset, size_t length) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t end = std::min(size_, offset + std::min(length, size_ - std::min(offset, size_)));
  const size_t first = (offset + page - 1) / page * page;  // the mapping is page-aligned
  const size_t last = end == size_ ? end : end / page * page;  // the last page may be partial
  if (first < last) madvise(data_ + first, last - first, MADV_DONTNEED);
}

MappedBuffer::~MappedBuffer() {
  if (data_ != nullptr) munmap(data_, size_);
}

}  // namespace sluice
