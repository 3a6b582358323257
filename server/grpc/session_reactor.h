// The server side of one Session stream: assembles chunked requests, runs them in order on the
// executor (never on a gRPC thread, except trivially cheap ones when nothing else is queued),
// streams replies back in order, and tears the session down (freeing every buffer) when the
// stream ends for any reason.
#ifndef SLUICE_SERVER_GRPC_SESSION_REACTOR_H_
#define SLUICE_SERVER_GRPC_SESSION_REACTOR_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/executor.h"
#include "grpcpp/grpcpp.h"
#include "engine/session_manager.h"
#include "sluice/v1/sluice.grpc.pb.h"

namespace sluice {

// Messages travel as raw ByteBuffers and are parsed here, so that bytes which are not a
// SessionRequest end the stream with INVALID_ARGUMENT instead of looking like a half-close.
class SessionReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // `manager` and `executor` must outlive every reactor (the server drains before they go).
  SessionReactor(SessionManager* manager, Executor* executor, std::string peer);

 private:
  using Responses = std::vector<v1::SessionResponse>;

  // A complete logical request, ready to run in order.
  struct Job {
    uint64_t id = 0;
    bool cheap = false;  // may run inline on the gRPC thread when nothing else is queued
    uint64_t staged = 0;  // request bytes it holds (an upload's data) until it runs
    absl::AnyInvocable<void(Responses*) &&> run;
  };

  // An upload whose chunks are still arriving.
  // The data stays in the chunks it arrived in (moved out of the parsed messages, never
  // copied) until the device copy gathers it.
  struct PendingUpload {
    uint64_t id = 0;
    std::vector<RangeRef> ranges;
    uint64_t expected = 0;
    uint64_t received = 0;
    std::vector<std::string> chunks;
    TransferBudget::Hold hold;  // the daemon's memory for `expected` bytes
    absl::Status error;
  };

  // A serialized reply; the last reply of a read keeps the read's transfer memory reserved
  // until it has been sent.
  struct PendingWrite {
    grpc::ByteBuffer buffer;
    TransferBudget::Hold hold;
  };

  // What to do once the lock is released: gRPC calls are never made under mu_.
  struct Actions {
    bool start_read = false;
    const grpc::ByteBuffer* write = nullptr;
    bool schedule = false;
    bool finish = false;
    grpc::Status finish_status;
  };

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // Read path: one read is outstanding at a time, so these touch upload_ without the lock.
  void Accept(v1::SessionRequest& request);
  void AcceptUpload(v1::SessionRequest& request);
  void FlushUpload(absl::Status interrupted);
  Job MakeJob(v1::SessionRequest& request);
  void Enqueue(Job job);

  // Runs the next queued job on the calling thread.
  void RunNextJob();
  void RunJob(Job& job);
  void Perform(const Actions& actions);

  // Decides what can happen next; must hold mu_.
  void ContinueLocked(Actions* actions) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Job bodies. They run one at a time, in request order, so ticket_ needs no lock.
  void DoOpen(uint64_t id, const v1::OpenRequest& request, Responses* out);
  void DoAllocate(uint64_t id, uint64_t bytes, Responses* out);
  void DoUpload(uint64_t id, const PendingUpload& upload, Responses* out);
  void DoRead(uint64_t id, const v1::ReadRequest& request, Responses* out);
  void DoFree(uint64_t id, uint64_t handle, Responses* out);
  void DoExecute(uint64_t id, const v1::ExecuteRequest& request, Responses* out);
  void DoPing(uint64_t id, v1::PingRequest& request, Responses* out);

  // Reads `ranges` (after `steps`, when executing) into chunked data responses.
  void ReadInto(uint64_t id, absl::Span<const RangeRef> reads,
                absl::FunctionRef<absl::Status(ReadSink)> run, Responses* out);
  static absl::Status NotOpenError();
  absl::Status RequireOpen() const;
  void Reply(uint64_t id, const absl::Status& status, Responses* out);

  SessionManager* const manager_;
  Executor* const executor_;
  const std::string peer_;
  const SessionLimits limits_;
  const absl::Time started_;

  // Read-path state (see Accept).
  grpc::ByteBuffer read_buffer_;
  v1::SessionRequest request_;
  std::optional<PendingUpload> upload_;
  bool open_seen_ = false;  // the first open fixes the chunk size

  // Job state: touched only by the job running now (jobs never overlap).
  std::unique_ptr<SessionManager::Ticket> ticket_;
  std::string client_name_;
  TransferBudget::Hold read_hold_;  // the running read's reservation, until RunJob queues it
  struct Stats {
    uint64_t requests = 0, errors = 0, allocations = 0, frees = 0, executes = 0;
    uint64_t steps = 0, bytes_up = 0, bytes_down = 0;
  } stats_;

  // Negotiated when the first open arrives; the read path checks chunk sizes against it.
  std::atomic<uint32_t> chunk_size_;
  // Set when the stream is cancelled; stops a running repeated sequence.
  std::atomic<bool> cancel_{false};
  // Set when an open was refused (and no open succeeded since): the read path refuses uploads.
  std::atomic<bool> open_refused_{false};

  absl::Mutex mu_;
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  uint64_t staged_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // sum of the queued jobs' `staged`
  bool job_running_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<PendingWrite> writes_ ABSL_GUARDED_BY(mu_);
  uint64_t write_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool read_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool malformed_ ABSL_GUARDED_BY(mu_) = false;  // a message was not a SessionRequest
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace sluice

#endif  // SLUICE_SERVER_GRPC_SESSION_REACTOR_H_
