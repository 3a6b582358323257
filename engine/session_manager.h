// The daemon's table of open sessions: it creates each session with the daemon's limits,
// enforces the session count, refuses new sessions while draining, and keeps the counts that
// GetInfo reports. Knows nothing of gRPC.
#ifndef SLUICE_ENGINE_SESSION_MANAGER_H_
#define SLUICE_ENGINE_SESSION_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/device.h"
#include "engine/session.h"
#include "engine/transfer_budget.h"
#include "proto/contract.h"

namespace sluice {

// Session::Options for a session with `limits`.
Session::Options SessionOptionsFor(const SessionLimits& limits);

class SessionManager {
 public:
  struct Options {
    uint32_t max_sessions = 256;
    // What every session gets; limits.chunk_size is the chunk for a client that states no
    // preference.
    SessionLimits limits;
    // The largest chunk a client may negotiate (the smallest is kMinChunkSize); it stays well
    // below gRPC's 4 MiB default message limit. limits.max_message_bytes must be at least this
    // plus kMessageOverheadBytes.
    uint32_t max_chunk_size = 2 << 20;
    // Host memory for uploads being assembled and reads waiting to be sent, all sessions
    // together (see TransferBudget); max_request_bytes plus a chunk serves the largest read.
    uint64_t max_transfer_bytes = uint64_t{8} << 30;
    // Called once, from the Open that finds the device lost for good (see Device::lost): a
    // daemon exits then, so that its supervisor starts it again on a fresh device.
    std::function<void()> on_device_lost;
    // Called when the last open session closes (on the thread that closed it, once its buffers
    // are freed): a daemon gives the heap back to the system then.
    std::function<void()> on_idle;

    // The chunk size for a client that asked for `requested` (0: the default), clamped to
    // [kMinChunkSize, max_chunk_size].
    uint32_t NegotiateChunkSize(uint32_t requested) const;
  };

  // An open session; closing it (destruction) frees its buffers and its slot.
  class Ticket {
   public:
    ~Ticket();
    Session& session() const { return *session_; }
    const std::string& id() const { return id_; }

   private:
    friend class SessionManager;
    Ticket(SessionManager* manager, std::unique_ptr<Session> session, std::string id);
    SessionManager* const manager_;
    std::unique_ptr<Session> session_;
    const std::string id_;
  };

  SessionManager(std::shared_ptr<Device> device, const Options& options);

  // Opens a session. ResourceExhausted at max_sessions; Unavailable while draining; errors of
  // the device. Thread-safe.
  absl::StatusOr<std::unique_ptr<Ticket>> Open();

  // From now on Open fails with Unavailable. Thread-safe.
  void BeginDrain() { draining_.store(true); }
  bool draining() const { return draining_.load(); }

  uint32_t active_sessions() const { return active_.load(); }
  uint64_t sessions_opened() const { return opened_.load(); }
  const Options& options() const { return options_; }
  Device& device() const { return *device_; }
  TransferBudget& transfers() { return transfers_; }
  const TransferBudget& transfers() const { return transfers_; }

 private:
  const std::shared_ptr<Device> device_;
  const Options options_;
  std::atomic<uint32_t> active_{0};
  std::atomic<uint64_t> opened_{0};
  std::atomic<bool> draining_{false};
  std::atomic<bool> lost_reported_{false};
  TransferBudget transfers_;
};

}  // namespace sluice

#endif  // SLUICE_ENGINE_SESSION_MANAGER_H_
