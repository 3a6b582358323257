// The session protocol on arbitrary streams: the bytes are a stream of messages, each a 2-byte
// little-endian length and that many bytes, parsed as sluice.v1.SessionRequest (a message that
// does not parse ends the stream, as in the daemon) and run in order on a real session over
// the CPU device, as the daemon's transport would. The daemon's handles are random, which no
// input could guess, so a handle below 64 in a request stands for the buffer allocated that
// many allocations earlier in the stream (0: the latest). Nothing may crash, hang past the request
// time limit or leak: after every input the session is gone, with every buffer and every byte
// of transfer memory given back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <memory>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/engine/session_manager.h"
#include "sluice/server/session_protocol.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {
namespace {

// Small limits, so that inputs exercise them rather than the host's memory.
SessionManager& Manager() {
  static SessionManager* const manager = [] {
    // Quiet: protobuf's complaints (invalid UTF-8 in a string field) would be most of the log.
    google::protobuf::SetLogHandler(nullptr);
    absl::StatusOr<std::shared_ptr<CpuDevice>> device =
        CpuDevice::Create({.memory_limit = 64 << 20, .threads = 1});
    if (!device.ok()) std::abort();
    SessionManager::Options options;
    options.max_sessions = 4;
    options.max_transfer_bytes = 32 << 20;
    options.limits.chunk_size = 64 << 10;
    options.limits.memory_quota = 16 << 20;
    options.limits.max_buffers = 64;
    options.limits.max_steps = 64;
    options.limits.max_ranges = 256;
    options.limits.max_request_bytes = 8 << 20;
    options.limits.max_request_seconds = 1;
    return new SessionManager(*device, options);
  }();
  return *manager;
}

// The stream's allocated handles, latest last.
using Handles = std::vector<uint64_t>;

uint64_t MapHandle(uint64_t handle, const Handles& handles) {
  if (handle >= 64 || handle >= handles.size()) return handle;
  return handles[handles.size() - 1 - handle];
}

void MapRanges(google::protobuf::RepeatedPtrField<v1::Range>* ranges, const Handles& handles) {
  for (v1::Range& range : *ranges) range.set_handle(MapHandle(range.handle(), handles));
}

void MapSteps(google::protobuf::RepeatedPtrField<v1::Step>* steps, const Handles& handles) {
  for (v1::Step& step : *steps) {
    for (int i = 0; i < step.handles_size(); ++i) {
      step.set_handles(i, MapHandle(step.handles(i), handles));
    }
  }
}

void MapHandles(v1::SessionRequest& request, const Handles& handles) {
  switch (request.op_case()) {
    case v1::SessionRequest::kUpload:
      MapRanges(request.mutable_upload()->mutable_ranges(), handles);
      break;
    case v1::SessionRequest::kRead:
      MapRanges(request.mutable_read()->mutable_ranges(), handles);
      break;
    case v1::SessionRequest::kFree:
      request.mutable_free()->set_handle(MapHandle(request.free().handle(), handles));
      break;
    case v1::SessionRequest::kExecute:
      MapSteps(request.mutable_execute()->mutable_prefix(), handles);
      MapSteps(request.mutable_execute()->mutable_repeated(), handles);
      MapRanges(request.mutable_execute()->mutable_reads(), handles);
      break;
    default:
      break;
  }
}

void RunAll(SessionProtocol& protocol, std::vector<SessionProtocol::Job>& jobs,
            Handles& handles) {
  for (SessionProtocol::Job& job : jobs) {
    SessionProtocol::Responses out;
    protocol.Run(job, &out);
    // A read (or an execute's reads) of more than a window streams: its windows, as the
    // transport asks for them, each taking the block and the reservation they were made with.
    for (bool more = true; more;) {
      protocol.TakeReadBlock();
      protocol.TakeReadHold();
      more = protocol.read_streaming();
      if (more) protocol.ContinueRead(&out);
    }
    if (out.empty() || !out.back().last()) std::abort();  // every request gets a final reply
    for (const v1::SessionResponse& response : out) {
      if (response.has_allocate()) handles.push_back(response.allocate().handle());
    }
  }
  jobs.clear();
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sluice::SessionProtocol;
  sluice::SessionManager& manager = sluice::Manager();
  {
    SessionProtocol protocol(&manager, "ipv4:127.0.0.1:1", nullptr);
    std::vector<SessionProtocol::Job> jobs;
    sluice::Handles handles;
    while (size >= 2) {
      const size_t length = std::min<size_t>(size - 2, data[0] | (size_t{data[1]} << 8));
      sluice::v1::SessionRequest request;
      if (!request.ParseFromArray(data + 2, static_cast<int>(length))) break;
      data += 2 + length;
      size -= 2 + length;
      sluice::MapHandles(request, handles);
      protocol.Accept(request, &jobs);
      sluice::RunAll(protocol, jobs, handles);
    }
    protocol.EndOfInput(&jobs);
    sluice::RunAll(protocol, jobs, handles);
    protocol.Close("the input ended");  // the ticket it returns ends the session here
  }
  if (manager.active_sessions() != 0 || manager.transfers().in_use() != 0 ||
      manager.device().memory().buffers() != 0) {
    std::abort();
  }
  return 0;
}
