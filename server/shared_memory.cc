#include "sluice/server/shared_memory.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sluice/base/random.h"
#include "sluice/base/status_macros.h"
#include "sluice/base/unix_socket.h"
#include "sluice/proto/contract.h"

namespace sluice {

absl::StatusOr<std::shared_ptr<SharedRegion>> SharedRegion::Map(int fd, uint64_t max_bytes) {
  struct Closer {
    int fd;
    ~Closer() { close(fd); }  // a mapping keeps the memory; the descriptor is not needed
  } closer{fd};
  // Only a memfd that can neither shrink nor grow: no page of the mapping can go away under
  // the daemon (a truncated file would fault it), and its size is the one checked here.
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) {
    return absl::FailedPreconditionError(
        "the shared memory is not a memfd (memfd_create with MFD_ALLOW_SEALING)");
  }
  if ((seals & F_SEAL_SHRINK) == 0 || (seals & F_SEAL_GROW) == 0) {
    return absl::FailedPreconditionError(
        "the shared memory must be sealed with F_SEAL_SHRINK and F_SEAL_GROW");
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError("the shared memory cannot be examined");
  }
  // Of ordinary memory: a page of a memfd of huge pages (MFD_HUGETLB) whose hole the client
  // punched comes back from the system's pool of them when the daemon touches it, and with the
  // pool empty the daemon would die of it (SIGBUS).
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0 || fs.f_type != TMPFS_MAGIC) {
    return absl::FailedPreconditionError(
        "the shared memory must be a memfd of ordinary memory (not MFD_HUGETLB)");
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return absl::InvalidArgumentError("the shared memory holds no bytes");
  if (size > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "shared memory of %d bytes; this daemon maps at most %d per session", size, max_bytes));
  }
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot map the shared memory read-write (sealed against writing?): %s",
        std::strerror(errno)));
  }
  return std::shared_ptr<SharedRegion>(new SharedRegion(static_cast<uint8_t*>(data), size));
}

SharedRegion::~SharedRegion() { munmap(data_, size_); }

absl::Status SharedRegion::CheckSpan(uint64_t size, uint64_t offset, uint64_t length) {
  if (offset > size || length > size - offset) {
    return absl::OutOfRangeError(absl::StrFormat(
        "the shared span [%d, +%d) is past the session's shared memory of %d bytes", offset,
        length, size));
  }
  return absl::OkStatus();
}

void SharedSlot::Attach(std::shared_ptr<SharedRegion> region) {
  absl::MutexLock lock(&mu_);
  region_ = std::move(region);
}

std::shared_ptr<SharedRegion> SharedSlot::region() const {
  absl::MutexLock lock(&mu_);
  return region_;
}

absl::StatusOr<std::unique_ptr<SharedRegions>> SharedRegions::Listen(const std::string& path,
                                                                     uint64_t max_bytes) {
  RETURN_IF_ERROR(ClaimUnixSocketPath(path));
  // Who may attach is who may write the socket: the daemon's user and group, as on its main
  // socket.
  absl::StatusOr<int> listening =
      ListenUnixSocket(path, kUnixSocketMode, kMaxConnections, SOCK_CLOEXEC);
  if (!listening.ok()) {
    return absl::Status(listening.status().code(),
                        absl::StrCat("cannot serve shared memory: ", listening.status().message()));
  }
  const int listener = *listening;
  int stop[2] = {-1, -1};
  if (pipe2(stop, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    close(listener);
    return absl::UnavailableError(
        absl::StrFormat("cannot serve shared memory on %s: %s", path, why));
  }
  std::unique_ptr<SharedRegions> regions(
      new SharedRegions(path, max_bytes, listener, stop[0], stop[1]));
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) regions->inode_ = st.st_ino;
  regions->thread_ = std::thread([r = regions.get()] { r->Serve(); });
  return regions;
}

SharedRegions::SharedRegions(std::string path, uint64_t max_bytes, int listener, int stop_read,
                             int stop_write)
    : path_(std::move(path)),
      max_bytes_(max_bytes),
      listener_(listener),
      stop_read_(stop_read),
      stop_write_(stop_write) {}

SharedRegions::~SharedRegions() {
  const char byte = 0;
  if (write(stop_write_, &byte, 1) < 0) {
    // The pipe is ours and empty: a write cannot fail but for a closed read end.
  }
  thread_.join();
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* connections) { return *connections == 0; }, &connections_));
  }
  close(listener_);
  close(stop_read_);
  close(stop_write_);
  struct stat st;
  if (lstat(path_.c_str(), &st) == 0 && st.st_ino == inode_) unlink(path_.c_str());
}

std::string SharedRegions::Offer(const std::shared_ptr<SharedSlot>& slot) {
  std::string token = RandomHexId() + RandomHexId();
  static_assert(kSharedMemoryTokenBytes == 64, "two 32-digit ids");
  absl::MutexLock lock(&mu_);
  for (auto it = offers_.begin(); it != offers_.end();) {
    auto here = it++;
    if (here->second.expired()) offers_.erase(here);  // its session is gone
  }
  offers_[token] = slot;
  return token;
}

void SharedRegions::Serve() {
  while (AwaitConnection(listener_, stop_read_)) {
    {
      // At the limit, the next connection waits in the listen queue.
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](int* connections) { return *connections < kMaxConnections; }, &connections_));
    }
    const int connection = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (connection < 0) continue;
    const timeval within = {kAttachSeconds, 0};
    setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &within, sizeof(within));
    setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &within, sizeof(within));
    {
      absl::MutexLock lock(&mu_);
      ++connections_;
    }
    std::thread([this, connection] { Attach(connection); }).detach();
  }
}

void SharedRegions::Attach(int connection) {
  char token[kSharedMemoryTokenBytes];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  iovec iov = {token, sizeof(token)};
  msghdr message{};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  const ssize_t got = recvmsg(connection, &message, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  // Every descriptor that came is taken, to be closed unless it is the one region.
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds.push_back(fd);
    }
  }
  const int error = errno;
  absl::Status status;
  if (got < 0 && (error == EAGAIN || error == EWOULDBLOCK)) {
    status = absl::DeadlineExceededError(
        absl::StrFormat("no attach arrived within %d s of connecting", kAttachSeconds));
  } else if (got != static_cast<ssize_t>(sizeof(token))) {
    status = absl::InvalidArgumentError(absl::StrFormat(
        "an attach is the offer's %d-byte token with one file descriptor",
        kSharedMemoryTokenBytes));
  } else if (fds.size() != 1 || (message.msg_flags & MSG_CTRUNC) != 0) {
    status = absl::InvalidArgumentError("an attach carries exactly one file descriptor");
  } else {
    status = AttachWith(std::string(token, sizeof(token)), fds[0]);
    fds.clear();  // taken by AttachWith
  }
  for (int fd : fds) close(fd);
  const std::string answer =
      status.ok() ? "OK\n"
                  : absl::StrFormat("ERR %d %s\n", static_cast<int>(status.code()),
                                    status.message());
  if (send(connection, answer.data(), answer.size(), MSG_NOSIGNAL) < 0) {
    // The client went: nothing to tell it.
  }
  close(connection);
  absl::MutexLock lock(&mu_);
  --connections_;
}

absl::Status SharedRegions::AttachWith(const std::string& token, int fd) {
  std::shared_ptr<SharedSlot> slot;
  {
    absl::MutexLock lock(&mu_);
    auto it = offers_.find(token);
    if (it != offers_.end()) slot = it->second.lock();
  }
  if (slot == nullptr) {
    close(fd);
    return absl::NotFoundError("no open session offered that token");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<SharedRegion> region, SharedRegion::Map(fd, max_bytes_));
  if (slot->budget() != nullptr) {
    // Counted while mapped, the region it replaces until that one goes too.
    ASSIGN_OR_RETURN(
        TransferBudget::Hold hold,
        slot->budget()->ReserveLeaving(region->bytes().size(), slot->room(),
                                       "a shared-memory region (with a chunk's room beside it)"));
    region->Count(std::move(hold));
  }
  slot->Attach(std::move(region));
  return absl::OkStatus();
}

}  // namespace sluice
