#include "sluice/client/resident_buffers.h"

#include <algorithm>

#include "sluice/base/status_macros.h"

namespace sluice {

ResidentBuffers::~ResidentBuffers() {
  for (const Held& h : held_) dispatch_.Free(h.resource).IgnoreError();
}

absl::StatusOr<Resource> ResidentBuffers::Allocate(size_t bytes) {
  ASSIGN_OR_RETURN(Resource r, dispatch_.Allocate(bytes));
  held_.push_back(Held{r, bytes});
  bytes_ += bytes;
  peak_ = std::max(peak_, bytes_);
  return r;
}

absl::Status ResidentBuffers::Free(const Resource& resource) {
  auto it = std::find_if(held_.begin(), held_.end(),
                         [&](const Held& h) { return h.resource == resource; });
  if (it == held_.end()) return absl::NotFoundError("the buffer is not held here");
  const Held held = *it;
  held_.erase(it);
  bytes_ -= held.bytes;
  return dispatch_.Free(held.resource);
}

}  // namespace sluice
