// The client's end of the same-host data path (see SharedMemoryOffer in sluice.proto): memory
// it shares with its daemon, a sealed memfd passed over the daemon's Unix socket. Private to
// the client library.
#ifndef SLUICE_CLIENT_REMOTE_SHARED_MEMORY_H_
#define SLUICE_CLIENT_REMOTE_SHARED_MEMORY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace sluice {

class SharedMemory {
 public:
  // Makes `bytes` of memory (a memfd sealed against shrinking and growing), maps it, and
  // attaches it to the session whose offer is `socket` and `token`, waiting at most `timeout`
  // for the daemon. Fails with the daemon's code and reason, or Unavailable when it cannot be
  // reached.
  static absl::StatusOr<std::unique_ptr<SharedMemory>> Attach(const std::string& socket,
                                                              const std::string& token,
                                                              uint64_t bytes,
                                                              absl::Duration timeout);
  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  absl::Span<uint8_t> bytes() const { return {data_, size_}; }
  // Where `piece` starts in this memory, if all of it lies there.
  std::optional<uint64_t> OffsetOf(absl::Span<const uint8_t> piece) const;

 private:
  SharedMemory(uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint8_t* const data_;
  const uint64_t size_;
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_REMOTE_SHARED_MEMORY_H_
