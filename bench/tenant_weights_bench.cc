// Weighted device time between tenants: two tenants run the same heavy load (resident IFDS
// solves on several sessions each, over and over) through one sluiced on loopback, first with
// equal weights (the baseline), then with weights 1 and 3. Prints, per run, each tenant's
// solves and the device time the daemon charged it (GetInfo's TenantInfo), and the ratios:
// with weights 1 and 3 the heavier tenant should get about 3x the device time and work.
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sluice/base/token.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/client/server_info.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/resident_solver.h"
#include "sluice/server/grpc/daemon.h"
#include "sluice/server/tenants.h"

ABSL_FLAG(int, sessions, 2, "sessions per tenant");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(20), "how long each run measures");
ABSL_FLAG(int, device_threads, 0, "the CPU device's threads (0: one per core)");
ABSL_FLAG(int, procedures, 200, "procedures of each solve's problem");

namespace sluice::bench {
namespace {

constexpr char kTokenLight[] = "bench-token-light";
constexpr char kTokenHeavy[] = "bench-token-heavy";

struct TenantRun {
  uint64_t solves = 0;
  double device_s = 0;
};

struct Run {
  TenantRun light, heavy;
  bool ok = false;
};

std::string TenantsToml(int heavy_weight) {
  return absl::StrCat("[tenants.light]\ntokens = [\"", FormatTokenDigest(DigestToken(kTokenLight)),
                      "\"]\nweight = 1\n\n[tenants.heavy]\ntokens = [\"",
                      FormatTokenDigest(DigestToken(kTokenHeavy)), "\"]\nweight = ",
                      heavy_weight, "\n");
}

double DeviceSeconds(const std::string& address, const char* token) {
  ClientCredentials credentials;
  credentials.token = token;
  absl::StatusOr<v1::GetInfoResponse> info =
      GetServerInfo(address, absl::Seconds(20), credentials);
  return info.ok() ? static_cast<double>(info->tenant().device_time_us()) / 1e6 : -1;
}

Run Measure(const std::shared_ptr<Device>& device, const ifds::Problem& problem,
            uint64_t expected_edges, int heavy_weight) {
  Run run;
  absl::StatusOr<std::shared_ptr<const TenantTable>> tenants =
      TenantTable::Parse(TenantsToml(heavy_weight), "bench");
  if (!tenants.ok()) return run;
  DaemonOptions options;
  options.listen = "127.0.0.1:0";
  options.streams.tenants = *tenants;
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(device, options);
  if (!daemon.ok()) return run;
  const std::string address = (*daemon)->address();

  const int sessions = absl::GetFlag(FLAGS_sessions);
  std::atomic<bool> stop{false}, failed{false};
  std::atomic<int> connected{0};
  std::atomic<uint64_t> solves[2] = {0, 0};
  std::vector<std::thread> threads;
  for (int tenant = 0; tenant < 2; ++tenant) {
    for (int s = 0; s < sessions; ++s) {
      threads.emplace_back([&, tenant] {
        RemoteDispatch::Options o{.target = address, .client_name = "weights-bench"};
        o.credentials.token = tenant == 0 ? kTokenLight : kTokenHeavy;
        absl::StatusOr<std::unique_ptr<RemoteDispatch>> d = RemoteDispatch::Connect(o);
        if (!d.ok()) {
          failed = true;
          return;
        }
        connected.fetch_add(1);
        while (!stop.load()) {
          ifds::ResidentStats stats;
          if (!ifds::SolveResident(**d, problem, {}, &stats).ok() ||
              stats.path_edges != expected_edges) {
            failed = true;
            return;
          }
          if (!stop.load()) solves[tenant].fetch_add(1);
        }
      });
    }
  }
  const absl::Time until = absl::Now() + absl::Seconds(60);
  while (connected.load() < 2 * sessions && !failed.load() && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  // Counted from when both are busy.
  absl::SleepFor(absl::Seconds(1));
  const uint64_t light_before = solves[0].load(), heavy_before = solves[1].load();
  const double light_device = DeviceSeconds(address, kTokenLight);
  const double heavy_device = DeviceSeconds(address, kTokenHeavy);
  absl::SleepFor(absl::GetFlag(FLAGS_duration));
  run.light.solves = solves[0].load() - light_before;
  run.heavy.solves = solves[1].load() - heavy_before;
  run.light.device_s = DeviceSeconds(address, kTokenLight) - light_device;
  run.heavy.device_s = DeviceSeconds(address, kTokenHeavy) - heavy_device;
  stop = true;
  for (std::thread& t : threads) t.join();
  (*daemon)->Shutdown(absl::Seconds(5));
  run.ok = !failed.load() && connected.load() == 2 * sessions && light_device >= 0 &&
           heavy_device >= 0 && run.light.solves > 0;
  return run;
}

int Main() {
  ifds::GeneratorOptions medium;  // each session's job, seeded
  medium.seed = 11;
  medium.procedures = absl::GetFlag(FLAGS_procedures);
  medium.facts = 64;
  medium.nodes_per_procedure = 16;
  absl::StatusOr<ifds::Problem> problem = ifds::Generate(medium);
  if (!problem.ok()) return 1;
  absl::StatusOr<std::shared_ptr<CpuDevice>> device =
      CpuDevice::Create({.threads = absl::GetFlag(FLAGS_device_threads)});
  if (!device.ok()) return 1;
  // Every solve's answer is checked against this one (in-process, on the same device).
  uint64_t expected_edges = 0;
  {
    absl::StatusOr<std::unique_ptr<LocalDispatch>> local = LocalDispatch::Create({.device = *device});
    ifds::ResidentStats stats;
    if (!local.ok() || !ifds::SolveResident(**local, *problem, {}, &stats).ok()) return 1;
    expected_edges = stats.path_edges;
  }
  std::printf("tenant weights: two tenants of %d sessions each run resident solves of %llu "
              "path edges over and over, %s per run\n",
              absl::GetFlag(FLAGS_sessions), static_cast<unsigned long long>(expected_edges),
              absl::FormatDuration(absl::GetFlag(FLAGS_duration)).c_str());
  double ratios[2] = {0, 0};
  for (const int weight : {1, 3}) {
    const Run run = Measure(*device, *problem, expected_edges, weight);
    if (!run.ok) {
      std::fprintf(stderr, "the run with weights 1 and %d failed (a solve failed or was wrong)\n",
                   weight);
      return 1;
    }
    const double device_ratio = run.heavy.device_s / run.light.device_s;
    const double work_ratio =
        static_cast<double>(run.heavy.solves) / static_cast<double>(run.light.solves);
    ratios[weight == 1 ? 0 : 1] = device_ratio;
    std::printf("weights 1 and %d: device time %.2f s and %.2f s (%.2fx), solves %llu and %llu "
                "(%.2fx)\n",
                weight, run.light.device_s, run.heavy.device_s, device_ratio,
                static_cast<unsigned long long>(run.light.solves),
                static_cast<unsigned long long>(run.heavy.solves), work_ratio);
  }
  std::printf("weight 3 against weight 1: %.2fx the device time (equal weights: %.2fx) "
              "[target about 3x] %s\n",
              ratios[1], ratios[0], ratios[1] > 2.4 && ratios[1] < 3.6 ? "met" : "MISSED");
  return 0;
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return sluice::bench::Main();
}
