#include "sluice/client/remote/outgoing.h"

#include <algorithm>

namespace sluice {

bool Outgoing::Next(v1::SessionRequest* msg, uint32_t chunk) {
  if (!is_upload) {
    msg->Swap(&head);
    return true;
  }
  if (!head_sent) {
    id = head.id();
    msg->Swap(&head);
    head_sent = true;
  } else {
    msg->Clear();
    msg->set_id(id);
  }
  v1::UploadRequest& upload = *msg->mutable_upload();
  std::string& out = *upload.mutable_data();
  out.clear();
  uint64_t take = std::min<uint64_t>(chunk, remaining);
  out.reserve(take);
  while (take > 0) {
    const absl::Span<const uint8_t> p = data[piece];
    const size_t n = std::min<uint64_t>(take, p.size() - piece_offset);
    out.append(reinterpret_cast<const char*>(p.data()) + piece_offset, n);
    take -= n;
    remaining -= n;
    piece_offset += n;
    if (piece_offset == p.size()) {
      ++piece;
      piece_offset = 0;
    }
  }
  upload.set_last(remaining == 0);
  return remaining == 0;
}

}  // namespace sluice
