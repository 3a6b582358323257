// A regular file's bytes mapped read-only: the system's cache of the file seen in place, with no
// copy and no memory of the process's own to fault in. Reading a file into fresh memory costs a
// page fault and a zeroed page for every 4 KiB before a byte is copied; a mapping costs a fault
// for every 16 pages or so and nothing else (docs/benchmarks.md, "The text read in place").
//
// A mapped file that shrinks while it is read would raise SIGBUS at the first byte past its new
// end. A MappedFile is guarded against that: such a page reads as zeros instead, and changed()
// says it happened, so that a reader reports the file changed where it would have crashed. The
// guard is a SIGBUS handler installed once per process, the first time a file is mapped; a
// SIGBUS that is not a mapped file's goes to the handler that was there before, or kills the
// process as it would have.
#ifndef SLUICE_BASE_MAPPED_FILE_H_
#define SLUICE_BASE_MAPPED_FILE_H_

#include <cstddef>
#include <string_view>

#include "absl/status/statusor.h"

namespace sluice {

class MappedFile {
 public:
  // How many files a process may hold mapped at once (the guard's table).
  static constexpr size_t kMaxMapped = 64;

  // Maps the first `size` bytes of the regular file `fd` (which may be closed afterwards). The
  // bytes are followed by at least one page of zeros: a scan that stops at a NUL byte stops
  // there. Errors: InvalidArgument for a size of 0 (nothing to map), ResourceExhausted when
  // kMaxMapped files are mapped already, Unavailable when the system will not map the file
  // (some file systems cannot; read it instead).
  static absl::StatusOr<MappedFile> Map(int fd, size_t size);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // The file's bytes, as they are when read (a mapping sees the file's changes).
  std::string_view bytes() const { return {data_, size_}; }
  // Gives back the pages wholly inside bytes [offset, offset + length), as a process's own
  // memory would be: they leave the process's resident set, and read the file again (from the
  // system's cache) if touched. A range past the end is clipped. Thread-safe.
  void Discard(size_t offset, size_t length) const;
  // Whether some of the bytes were read past the file's end (it shrank while mapped): those
  // read as zeros. Thread-safe.
  bool changed() const;

 private:
  void Unmap();

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // the whole mapping: the file's pages and the zero pages after them
  int slot_ = -1;      // the guard's entry for the file's pages
};

}  // namespace sluice

#endif  // SLUICE_BASE_MAPPED_FILE_H_
