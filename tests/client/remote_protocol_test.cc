// RemoteDispatch against a server that breaks the protocol: the client must fail the call and
// the session, and never read the caller's memory after the call returned.
#include <atomic>
#include <deque>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/v1/sluice.grpc.pb.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;

// How the test server answers an upload's first message.
enum class UploadReply {
  // OK, and it stops reading: a protocol violation (only a refusal may come early), and flow
  // control holds the rest of the upload on the client.
  kOkAndStopReading,
  // RESOURCE_EXHAUSTED, as a daemon refuses a bad upload at once; it goes on reading and drops
  // what still arrives of the upload, counting it.
  kRefuseAndDrop,
};

// Answers open, allocate and free properly (free: refused), and an upload as `mode` says.
class EarlyReplyReactor final
    : public grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse> {
 public:
  EarlyReplyReactor(UploadReply mode, std::atomic<int>* upload_messages)
      : mode_(mode), upload_messages_(upload_messages) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      absl::MutexLock lock(&mu_);
      read_done_ = true;
      MaybeFinishLocked();
      return;
    }
    v1::SessionResponse reply;
    reply.set_id(request_.id());
    reply.set_last(true);
    bool send = false;
    if (request_.has_open()) {
      v1::SessionLimits& limits = *reply.mutable_open()->mutable_limits();
      limits.set_chunk_size(4096);
      limits.set_max_ranges(1024);
      limits.set_max_steps(1024);
      limits.set_max_request_bytes(1 << 30);
      limits.set_max_message_bytes(8 << 20);
      send = true;
    } else if (request_.has_allocate()) {
      reply.mutable_allocate()->set_handle(next_handle_++);
      send = true;
    } else if (request_.has_free()) {
      reply.mutable_status()->set_code(static_cast<int>(absl::StatusCode::kNotFound));
      reply.mutable_status()->set_message("this server forgets every buffer");
      send = true;
    } else if (request_.has_upload()) {
      upload_messages_->fetch_add(1);
      if (request_.upload().ranges_size() > 0) {
        if (mode_ == UploadReply::kOkAndStopReading) {
          Queue(std::move(reply));  // the violation: a final reply after the first of many
          return;                   // chunks, and no more reading
        }
        reply.mutable_status()->set_code(static_cast<int>(absl::StatusCode::kResourceExhausted));
        reply.mutable_status()->set_message("no transfer memory for this upload");
        send = true;
      }
    }
    if (send) Queue(std::move(reply));
    StartRead(&request_);
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    if (!finished_) {
      finished_ = true;
      Finish(grpc::Status::CANCELLED);
    }
  }

  void OnWriteDone(bool) override {
    absl::MutexLock lock(&mu_);
    writes_.pop_front();
    if (!writes_.empty()) StartWrite(&writes_.front());
    MaybeFinishLocked();
  }

  void OnDone() override { delete this; }

 private:
  void Queue(v1::SessionResponse reply) {
    absl::MutexLock lock(&mu_);
    writes_.push_back(std::move(reply));
    if (writes_.size() == 1) StartWrite(&writes_.front());
  }
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (read_done_ && writes_.empty() && !finished_) {
      finished_ = true;
      Finish(grpc::Status::OK);
    }
  }

  const UploadReply mode_;
  std::atomic<int>* const upload_messages_;
  v1::SessionRequest request_;
  uint64_t next_handle_ = 42;  // read path only
  absl::Mutex mu_;
  std::deque<v1::SessionResponse> writes_ ABSL_GUARDED_BY(mu_);
  bool read_done_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

class EarlyReplyService final : public v1::Sluice::CallbackService {
 public:
  UploadReply mode = UploadReply::kOkAndStopReading;
  std::atomic<int> upload_messages{0};  // every upload message received

 private:
  grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse>* Session(
      grpc::CallbackServerContext*) override {
    return new EarlyReplyReactor(mode, &upload_messages);
  }
};

// The misbehaving server on a free port, and a client of it.
class RemoteProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    // A fixed, small receive window: the unread rest of an upload cannot all be in flight.
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override { server_->Shutdown(); }

  absl::StatusOr<std::unique_ptr<RemoteDispatch>> Connect(absl::Duration call_timeout) {
    return RemoteDispatch::Connect(
        {.target = "127.0.0.1:" + std::to_string(port_), .call_timeout = call_timeout});
  }

  EarlyReplyService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(RemoteProtocolTest, AFinalReplyBeforeTheUploadWasSentEndsTheSession) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> d, Connect(absl::Seconds(30)));
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(64 << 20));
  {
    // 16384 chunks of 4 KiB; the server answers after the first and reads no more. The source
    // dies with this scope: under AddressSanitizer any later read of it by the client would be
    // reported.
    std::vector<uint8_t> source(64 << 20, 7);
    EXPECT_THAT(d->Upload(r, source), StatusIs(absl::StatusCode::kInternal));
  }
  EXPECT_FALSE(d->Allocate(4).ok()) << "the session is over";
}

TEST_F(RemoteProtocolTest, AnUploadRefusedEarlyStopsSendingAndTheSessionGoesOn) {
  service_.mode = UploadReply::kRefuseAndDrop;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> d, Connect(absl::Seconds(30)));
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(64 << 20));
  {
    // 16384 chunks of 4 KiB, refused at the first. The source dies with this scope: under
    // AddressSanitizer any later read of it by the client would be reported.
    std::vector<uint8_t> source(64 << 20, 7);
    EXPECT_THAT(d->Upload(r, source), StatusIs(absl::StatusCode::kResourceExhausted));
  }
  // The rest of the upload is not sent once the refusal is in: what arrived is what went out
  // before it, not all 16384 chunks.
  ASSERT_OK(d->Allocate(4).status()) << "the session goes on";
  EXPECT_LT(service_.upload_messages.load(), 16384) << "the client sent the whole upload";
}

TEST_F(RemoteProtocolTest, ACallWithNoReplyTimesOutAndLaterCallsFindTheSessionGone) {
  // The server answers open and allocate, never a read.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> d, Connect(absl::Seconds(1)));
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(64));
  EXPECT_THAT(d->DownloadRange(r, 0, 4), StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(d->Allocate(4),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::HasSubstr("deadline")));
}

TEST_F(RemoteProtocolTest, AFreeGoesWithoutWaitingAndItsRefusalClosesTheSession) {
  // The server refuses every free.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RemoteDispatch> d, Connect(absl::Seconds(30)));
  ASSERT_OK_AND_ASSIGN(Resource r, d->Allocate(64));
  const uint64_t trips = d->counters().round_trips;
  ASSERT_OK(d->Free(r)) << "nothing this dispatcher can see rules the free out";
  EXPECT_EQ(d->counters().round_trips, trips) << "no round trip";
  EXPECT_THAT(d->Free(r), StatusIs(absl::StatusCode::kNotFound)) << "freed already: local";
  // The server's refusal arrives before the next call's reply, and closes the session.
  EXPECT_THAT(d->Allocate(4), StatusIs(absl::StatusCode::kUnavailable,
                                       ::testing::HasSubstr("sent without waiting: NOT_FOUND")));
  EXPECT_FALSE(d->Allocate(4).ok());
}

}  // namespace
}  // namespace sluice
