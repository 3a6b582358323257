// A Session stream driven message by message, bypassing RemoteDispatch: for tests that send
// what a well-behaved client never would. The whole stream has a 60 s deadline.
#ifndef SLUICE_TESTS_TESTING_RAW_SESSION_H_
#define SLUICE_TESTS_TESTING_RAW_SESSION_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "sluice/proto/codec.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice::testing {

class RawSession {
 public:
  // `token`: a tenant's bearer token, for a daemon with tenants.
  explicit RawSession(const std::string& target, const std::string& token = "")
      : RawSession(target, token, grpc::ChannelArguments()) {}
  // With the channel's arguments (a test that wants the daemon to keep its replies takes
  // little of them: a small flow-control window, GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES).
  RawSession(const std::string& target, const std::string& token,
             const grpc::ChannelArguments& arguments)
      : channel_(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(),
                                           arguments)),
        stub_(v1::Sluice::NewStub(channel_)) {
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    if (!token.empty()) context_.AddMetadata("authorization", "Bearer " + token);
    stream_ = stub_->Session(&context_);
  }
  ~RawSession() {
    if (!finished_) {
      context_.TryCancel();
      stream_->Finish().IgnoreError();
    }
  }

  bool Send(const v1::SessionRequest& request) { return stream_->Write(request); }
  // The next response, whatever it answers; false once the stream ends.
  bool Next(v1::SessionResponse* response) { return stream_->Read(response); }

  // Reads responses until the final one for `id`; the data of all chunks is concatenated
  // into `data`, and the final responses for other ids go to `others` if given (else they are
  // dropped). Unavailable if the stream ends first.
  absl::StatusOr<v1::SessionResponse> Await(uint64_t id, std::string* data = nullptr,
                                            std::vector<v1::SessionResponse>* others = nullptr) {
    v1::SessionResponse response;
    while (stream_->Read(&response)) {
      if (response.id() != id) {
        if (others != nullptr && response.last()) others->push_back(response);
        continue;
      }
      if (data != nullptr && response.has_data()) data->append(response.data().data());
      if (response.last()) return response;
    }
    return absl::UnavailableError("the stream ended");
  }

  // Sends `request` with `id` and returns the status of its final response.
  absl::Status Call(v1::SessionRequest request, uint64_t id, v1::SessionResponse* out = nullptr,
                    std::string* data = nullptr) {
    request.set_id(id);
    if (!Send(request)) return absl::UnavailableError("cannot send");
    absl::StatusOr<v1::SessionResponse> response = Await(id, data);
    if (!response.ok()) return response.status();
    if (out != nullptr) *out = *response;
    return StatusFromProto(response->status());
  }

  absl::StatusOr<v1::OpenResponse> Open(uint32_t chunk_size = 0) {
    v1::SessionRequest request;
    request.mutable_open()->set_client_name("raw");
    request.mutable_open()->set_chunk_size(chunk_size);
    v1::SessionResponse response;
    absl::Status status = Call(request, next_id_++, &response);
    if (!status.ok()) return status;
    return response.open();
  }

  // Opens a resumable session (OpenRequest.resumable) as client `client_name`, or resumes the
  // one `resume_token` names; returns the daemon's reply.
  absl::StatusOr<v1::OpenResponse> OpenResumable(const std::string& resume_token = "",
                                                 const std::string& client_name = "raw") {
    v1::SessionRequest request;
    request.mutable_open()->set_client_name(client_name);
    if (resume_token.empty()) {
      request.mutable_open()->set_resumable(true);
    } else {
      request.mutable_open()->set_resume_token(resume_token);
    }
    v1::SessionResponse response;
    absl::Status status = Call(request, next_id_++, &response);
    if (!status.ok()) return status;
    return response.open();
  }
  // Ids from `next` on.
  void SetNextId(uint64_t next) { next_id_ = next; }

  absl::StatusOr<uint64_t> Allocate(uint64_t bytes) {
    v1::SessionRequest request;
    request.mutable_allocate()->set_bytes(bytes);
    v1::SessionResponse response;
    absl::Status status = Call(request, next_id_++, &response);
    if (!status.ok()) return status;
    return response.allocate().handle();
  }

  absl::StatusOr<std::string> Read(uint64_t handle, uint64_t offset, uint64_t length) {
    v1::SessionRequest request;
    v1::Range& r = *request.mutable_read()->add_ranges();
    r.set_handle(handle);
    r.set_offset(offset);
    r.set_length(length);
    std::string data;
    absl::Status status = Call(request, next_id_++, nullptr, &data);
    if (!status.ok()) return status;
    return data;
  }

  absl::Status Ping() {
    v1::SessionRequest request;
    request.mutable_ping()->set_payload("hello");
    return Call(request, next_id_++);
  }

  // Half-closes and returns the stream's final status.
  grpc::Status Finish() {
    stream_->WritesDone();
    v1::SessionResponse ignored;
    while (stream_->Read(&ignored)) {
    }
    finished_ = true;
    return stream_->Finish();
  }

  // Reads until the daemon ends the stream and returns its final status (without half-closing:
  // for streams the daemon ends on its own). The stream's 60 s deadline bounds the wait.
  grpc::Status AwaitEnd() {
    v1::SessionResponse ignored;
    while (stream_->Read(&ignored)) {
    }
    finished_ = true;
    return stream_->Finish();
  }

  void Cancel() { context_.TryCancel(); }
  uint64_t NextId() { return next_id_++; }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Sluice::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>> stream_;
  uint64_t next_id_ = 1;
  bool finished_ = false;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_RAW_SESSION_H_
