// One gRPC call of RemoteDispatch's session stream (client/remote/stream.h): a session has one
// at a time, and a new one each time it resumes. Private to the client library.
#ifndef SLUICE_CLIENT_REMOTE_LINK_H_
#define SLUICE_CLIENT_REMOTE_LINK_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "sluice/client/remote/channel.h"
#include "sluice/client/remote/stream.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

// One gRPC call of the session's stream. Its state is guarded by the stream's lock; its
// callbacks go to the stream.
class RemoteDispatch::Stream::Link final
    : public grpc::ClientBidiReactor<v1::SessionRequest, IncomingReply> {
 public:
  explicit Link(Stream* stream) : stream_(stream) {}

  // Starts the call; `first` (a resume's open) is written before anything else.
  void Start(SessionStub* stub, const ClientCredentials& credentials,
             const v1::SessionRequest* first) {
    AddToken(credentials, &context);
    static const std::string* const method =
        new std::string(absl::StrCat("/", v1::Sluice::service_full_name(), "/Session"));
    stub->PrepareBidiStreamingCall(&context, *method, grpc::StubOptions(), this);
    // Writes start from caller threads at any time; the hold keeps OnDone from running until
    // no write can start any more.
    AddHold();
    StartRead(&read_msg);
    if (first != nullptr) {
      write_msg = *first;
      StartWrite(&write_msg);
    }
    StartCall();
  }

  grpc::ClientContext context;
  v1::SessionRequest write_msg;  // owned by the write in flight
  IncomingReply read_msg;        // owned by the read in flight

  // Guarded by the stream's lock.
  bool ready = true;          // false while a resume's open waits for its answer
  uint64_t open_id = 0;       // of that open
  bool open_answered = false;
  absl::Status open_status;   // its answer, or why the link ended first
  uint64_t last_completed = 0;
  bool writing = false;
  bool writes_done = false;
  bool writes_done_complete = false;
  bool read_ended = false;    // no more replies: OnDone comes next
  bool write_failed = false;  // no more writes: OnDone comes next
  bool hold_released = false;
  bool abandoned = false;     // a resume's link given up
  bool done = false;
  // Set with done: why the link ended, and whether that end is worth resuming the session for
  // (a resume's link can end after the daemon resumed the session on it, before it became the
  // session's link: its resume then goes on from here).
  absl::Status ended;
  bool resumable_end = false;

 private:
  void OnWriteDone(bool ok) override { stream_->OnWriteDone(this, ok); }
  void OnWritesDoneDone(bool) override { stream_->OnWritesDoneDone(this); }
  void OnReadDone(bool ok) override { stream_->OnReadDone(this, ok); }
  void OnDone(const grpc::Status& status) override { stream_->OnDone(this, status); }

  Stream* const stream_;
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_REMOTE_LINK_H_
