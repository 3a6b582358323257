#include "sluice/base/mapped_file.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <utility>

#include "absl/strings/str_format.h"

namespace sluice {
namespace {

// The guard's table: the pages of each mapped file, for the SIGBUS handler to find. An entry is
// taken before its range is set and freed after the range is cleared; the handler reads only
// the range (atomics: lock-free, as a handler must be).
struct Guarded {
  std::atomic<bool> taken{false};
  std::atomic<uintptr_t> begin{0};  // 0: no range
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> shrank{false};
};
std::array<Guarded, MappedFile::kMaxMapped> guarded;

// Set once, before the handler is installed.
size_t page_bytes = 0;
struct sigaction previous_action;

// A fault on a mapped file's page past its end: a page of zeros takes its place, and the file is
// marked as changed. Any other SIGBUS is handled as it would have been without this handler.
void OnBus(int signal_number, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Guarded& g : guarded) {
    const uintptr_t begin = g.begin.load(std::memory_order_acquire);
    if (begin == 0 || address < begin || address >= g.end.load(std::memory_order_acquire)) {
      continue;
    }
    void* const page = reinterpret_cast<void*>(address / page_bytes * page_bytes);
    if (mmap(page, page_bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
        MAP_FAILED) {
      g.shrank.store(true, std::memory_order_relaxed);
      errno = saved_errno;
      return;
    }
    break;
  }
  errno = saved_errno;
  if ((previous_action.sa_flags & SA_SIGINFO) != 0) {
    previous_action.sa_sigaction(signal_number, info, context);
    return;
  }
  if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
    previous_action.sa_handler(signal_number);
    return;
  }
  // No handler before this one: the default action (a synchronous SIGBUS cannot be ignored).
  signal(SIGBUS, SIG_DFL);
  raise(SIGBUS);
}

bool InstallGuard() {
  static const bool installed = [] {
    page_bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    if (sigaction(SIGBUS, nullptr, &previous_action) != 0) return false;
    struct sigaction action = {};
    action.sa_sigaction = OnBus;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&action.sa_mask);
    return sigaction(SIGBUS, &action, nullptr) == 0;
  }();
  return installed;
}

}  // namespace

absl::StatusOr<MappedFile> MappedFile::Map(int fd, size_t size) {
  if (size == 0) return absl::InvalidArgumentError("an empty file has no pages to map");
  if (!InstallGuard()) return absl::UnavailableError("cannot install the mapped files' guard");
  const size_t page = page_bytes;
  if (size > SIZE_MAX / 2) {
    return absl::ResourceExhaustedError(absl::StrFormat("no room to map %d bytes", size));
  }
  const size_t file_pages = (size + page - 1) / page * page;
  const size_t mapped = file_pages + page;
  // Zeros first, the whole length; then the file over its part of it.
  void* const zeros =
      mmap(nullptr, mapped, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (zeros == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrFormat("no room to map %d bytes", size));
  }
  MappedFile file;
  file.data_ = static_cast<char*>(zeros);
  file.size_ = size;
  file.mapped_ = mapped;
  for (size_t k = 0; k < guarded.size(); ++k) {
    if (!guarded[k].taken.exchange(true, std::memory_order_acq_rel)) {
      file.slot_ = static_cast<int>(k);
      break;
    }
  }
  if (file.slot_ < 0) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%d files are mapped already, as many as may be", kMaxMapped));
  }
  // Guarded before the file's pages are there: a fault on them finds its entry.
  Guarded& g = guarded[static_cast<size_t>(file.slot_)];
  g.shrank.store(false, std::memory_order_relaxed);
  g.end.store(reinterpret_cast<uintptr_t>(zeros) + file_pages, std::memory_order_release);
  g.begin.store(reinterpret_cast<uintptr_t>(zeros), std::memory_order_release);
  if (mmap(zeros, file_pages, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
    return absl::UnavailableError(
        absl::StrFormat("the system does not map this file (errno %d)", errno));
  }
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)),
      slot_(std::exchange(other.slot_, -1)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
    slot_ = std::exchange(other.slot_, -1);
  }
  return *this;
}

MappedFile::~MappedFile() { Unmap(); }

void MappedFile::Unmap() {
  if (slot_ >= 0) {
    Guarded& g = guarded[static_cast<size_t>(slot_)];
    g.begin.store(0, std::memory_order_release);
    g.end.store(0, std::memory_order_release);
  }
  if (data_ != nullptr) munmap(data_, mapped_);
  if (slot_ >= 0) guarded[static_cast<size_t>(slot_)].taken.store(false, std::memory_order_release);
  data_ = nullptr;
  size_ = mapped_ = 0;
  slot_ = -1;
}

void MappedFile::Discard(size_t offset, size_t length) const {
  if (data_ == nullptr || offset >= size_) return;
  const size_t end = offset + std::min(length, size_ - offset);
  const uintptr_t first = (reinterpret_cast<uintptr_t>(data_) + offset + page_bytes - 1) /
                          page_bytes * page_bytes;
  // A range to the end takes the file's last page, partial or not.
  const uintptr_t last =
      (reinterpret_cast<uintptr_t>(data_) + end + (end == size_ ? page_bytes - 1 : 0)) /
      page_bytes * page_bytes;
  if (first < last) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

bool MappedFile::changed() const {
  return slot_ >= 0 &&
         guarded[static_cast<size_t>(slot_)].shrank.load(std::memory_order_relaxed);
}

}  // namespace sluice
