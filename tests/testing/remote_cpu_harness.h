// RemoteDispatch sessions on a real sluiced child process serving the CPU device.
#ifndef SLUICE_TESTS_TESTING_REMOTE_CPU_HARNESS_H_
#define SLUICE_TESTS_TESTING_REMOTE_CPU_HARNESS_H_

#include <memory>

#include "sluice/client/remote_dispatch.h"
#include "sluice/client/server_info.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/dispatch_harness.h"

namespace sluice::testing {

inline DeviceCounters CountersFromInfo(const v1::GetInfoResponse& info) {
  const v1::DeviceCounters& c = info.devices(0).counters();
  return DeviceCounters{.bytes_uploaded = c.bytes_uploaded(),
                        .bytes_downloaded = c.bytes_downloaded(),
                        .synchronizations = c.synchronizations(),
                        .launches = c.launches(),
                        .allocations = c.allocations(),
                        .frees = c.frees()};
}

class RemoteCpuHarness : public DispatchHarness {
 public:
  RemoteCpuHarness() {
    absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon =
        DaemonProcess::Start({"--backend=cpu", "--cpu_memory=4G"});
    if (daemon.ok()) daemon_ = std::move(*daemon);
    start_status_ = daemon.status();
  }

  absl::StatusOr<std::unique_ptr<ResidentDispatch>> NewDispatch() override {
    if (!start_status_.ok()) return start_status_;
    absl::StatusOr<std::unique_ptr<RemoteDispatch>> dispatch = RemoteDispatch::Connect(
        {.target = daemon_->address(), .client_name = "conformance",
         .call_timeout = absl::Seconds(120)});
    if (!dispatch.ok()) return dispatch.status();
    return std::unique_ptr<ResidentDispatch>(std::move(*dispatch));
  }

  absl::StatusOr<DeviceCounters> Counters() override {
    if (!start_status_.ok()) return start_status_;
    absl::StatusOr<v1::GetInfoResponse> info = GetServerInfo(daemon_->address(), absl::Seconds(30));
    if (!info.ok()) return info.status();
    return CountersFromInfo(*info);
  }

  DaemonProcess& daemon() { return *daemon_; }

 private:
  std::unique_ptr<DaemonProcess> daemon_;
  absl::Status start_status_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_REMOTE_CPU_HARNESS_H_
