// Writes seed streams for session_protocol_fuzz into the directory given: each file is a
// stream of messages (a 2-byte little-endian length, then a sluice.v1.SessionRequest), using
// the fuzzer's handle convention (a handle below 64 is the buffer allocated that many
// allocations earlier; 0 the latest). Run once; the output is checked in.
#include <cstdio>
#include <string>
#include <vector>

#include "sluice/v1/sluice.pb.h"

namespace {

using sluice::v1::SessionRequest;

class Stream {
 public:
  SessionRequest& Add() {
    requests_.emplace_back();
    requests_.back().set_id(requests_.size());
    return requests_.back();
  }
  Stream& Open() {
    Add().mutable_open()->set_client_name("seed");
    return *this;
  }
  Stream& Allocate(uint64_t bytes) {
    Add().mutable_allocate()->set_bytes(bytes);
    return *this;
  }
  Stream& Upload(uint64_t handle, const std::string& data) {
    SessionRequest& r = Add();
    sluice::v1::Range* range = r.mutable_upload()->add_ranges();
    range->set_handle(handle);
    range->set_length(data.size());
    r.mutable_upload()->set_data(data);
    r.mutable_upload()->set_last(true);
    return *this;
  }
  Stream& Read(uint64_t handle, uint64_t offset, uint64_t length) {
    sluice::v1::Range* range = Add().mutable_read()->add_ranges();
    range->set_handle(handle);
    range->set_offset(offset);
    range->set_length(length);
    return *this;
  }
  Stream& Step(const std::string& kernel, std::vector<uint64_t> params,
               std::vector<uint64_t> handles, bool repeated = false, uint32_t count = 0) {
    SessionRequest& r = Add();
    sluice::v1::ExecuteRequest* e = r.mutable_execute();
    sluice::v1::Step* step = repeated ? e->add_repeated() : e->add_prefix();
    step->set_kernel(kernel);
    for (uint64_t p : params) step->add_params(p);
    for (uint64_t h : handles) step->add_handles(h);
    if (repeated) e->set_repeat_count(count);
    sluice::v1::Range* read = e->add_reads();
    read->set_handle(handles.front());
    read->set_length(4);
    return *this;
  }
  Stream& Free(uint64_t handle) {
    Add().mutable_free()->set_handle(handle);
    return *this;
  }
  Stream& Ping() {
    Add().mutable_ping()->set_payload("ping");
    return *this;
  }
  Stream& Cancel(uint64_t target) {
    Add().mutable_cancel()->set_target(target);
    return *this;
  }
  bool Write(const std::string& path) const {
    std::string bytes;
    for (const SessionRequest& r : requests_) {
      const std::string message = r.SerializeAsString();
      bytes.push_back(static_cast<char>(message.size() & 0xff));
      bytes.push_back(static_cast<char>(message.size() >> 8));
      bytes += message;
    }
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return false;
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    return std::fclose(f) == 0 && ok;
  }

 private:
  std::vector<SessionRequest> requests_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_session_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<std::pair<std::string, Stream>> seeds;
  seeds.emplace_back("open_ping", Stream().Open().Ping());
  seeds.emplace_back("upload_read_free", Stream()
                                             .Open()
                                             .Allocate(64)
                                             .Upload(0, std::string(16, 'x'))
                                             .Read(0, 8, 8)
                                             .Free(0)
                                             .Read(0, 0, 4));
  seeds.emplace_back("fill_iota_scan", Stream()
                                           .Open()
                                           .Allocate(256)
                                           .Allocate(256)
                                           .Allocate(4)
                                           .Step("fill_u32", {7}, {2})
                                           .Step("iota_u32", {1, 2}, {1})
                                           .Step("exclusive_scan_u32", {}, {2, 1, 0, 0}));
  seeds.emplace_back("repeat_guarded", Stream()
                                           .Open()
                                           .Allocate(64)
                                           .Step("atomic_add_u32", {0, 1}, {0}, true, 5)
                                           .Step("repeat_while_u32", {0}, {0}, true, 3));
  seeds.emplace_back("cancel_and_errors", Stream()
                                              .Allocate(16)  // before open
                                              .Open()
                                              .Open()
                                              .Allocate(uint64_t{1} << 40)
                                              .Cancel(99)
                                              .Read(12345, 0, 4));
  for (const auto& [name, stream] : seeds) {
    if (!stream.Write(dir + "/" + name)) {
      std::fprintf(stderr, "cannot write %s/%s\n", dir.c_str(), name.c_str());
      return 1;
    }
  }
  return 0;
}
