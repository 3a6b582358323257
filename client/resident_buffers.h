// Resident buffers owned by one piece of work: freed when it ends, on every path, so an error
// half-way through a solve leaks nothing on the device.
#ifndef SLUICE_CLIENT_RESIDENT_BUFFERS_H_
#define SLUICE_CLIENT_RESIDENT_BUFFERS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/client/resident_dispatch.h"

namespace sluice {

class ResidentBuffers {
 public:
  explicit ResidentBuffers(ResidentDispatch& dispatch) : dispatch_(dispatch) {}
  // Frees every buffer still held (errors are ignored: the dispatcher may be gone).
  ~ResidentBuffers();
  ResidentBuffers(const ResidentBuffers&) = delete;
  ResidentBuffers& operator=(const ResidentBuffers&) = delete;

  // Allocates through the dispatcher and holds the buffer. Errors of Allocate.
  absl::StatusOr<Resource> Allocate(size_t bytes);
  // Frees a held buffer now. NotFound if this holder does not hold it.
  absl::Status Free(const Resource& resource);

  uint64_t bytes() const { return bytes_; }
  uint64_t peak_bytes() const { return peak_; }

 private:
  struct Held {
    Resource resource;
    size_t bytes;
  };
  ResidentDispatch& dispatch_;
  std::vector<Held> held_;
  uint64_t bytes_ = 0;
  uint64_t peak_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_RESIDENT_BUFFERS_H_
