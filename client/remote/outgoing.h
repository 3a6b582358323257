// One request of RemoteDispatch's stream on its way out: the messages it becomes as the stream
// is ready for them. Private to the client library.
#ifndef SLUICE_CLIENT_REMOTE_OUTGOING_H_
#define SLUICE_CLIENT_REMOTE_OUTGOING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

// One logical request, turned into messages as the stream is ready for them. Upload data is
// copied from the caller's memory chunk by chunk (under the stream lock), never all at once.
struct Outgoing {
  uint64_t call_id = 0;     // the request id, set when it is queued
  v1::SessionRequest head;  // the whole request, or an upload's first message (its ranges)
  bool is_upload = false;
  std::vector<absl::Span<const uint8_t>> data;  // upload payload, concatenated in order
  size_t piece = 0;
  size_t piece_offset = 0;
  uint64_t remaining = 0;
  bool head_sent = false;
  uint64_t id = 0;  // kept apart: `head` is swapped out with the first message

  // Fills `msg` with the next message; true when it is the request's last.
  bool Next(v1::SessionRequest* msg, uint32_t chunk);
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_REMOTE_OUTGOING_H_
