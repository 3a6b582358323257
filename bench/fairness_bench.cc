// Device time shared by client: a light client's small IFDS solve and its 4-byte read latency
// through sluiced on loopback, unloaded and then while one heavy client runs resident solves
// on 8 sessions at once (target: at most 2x; docs/benchmarks.md). For contrast, the
// same load split over 8 clients of one session each, which are owed 8 shares: the light client
// then gets a ninth of the device. The clients are tenants (a token each): without tenants
// every process of one user on a host is one client, this benchmark's threads included.
#include <algorithm>
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
#include "bench/json_out.h"
#include "sluice/base/token.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/resident_solver.h"
#include "sluice/server/grpc/daemon.h"
#include "sluice/server/tenants.h"

ABSL_FLAG(int, solves, 7, "light-client solves per measurement (the median is kept)");
ABSL_FLAG(int, reads, 400, "light-client 4-byte reads per measurement");
ABSL_FLAG(int, light_procedures, 400, "procedures of the light client's problem");
ABSL_FLAG(int, heavy_sessions, 8, "sessions of the heavy load");
ABSL_FLAG(std::string, json, "", "also write the figures, by name, to this JSON file");
ABSL_FLAG(int, device_threads, 0, "the CPU device's threads (0: one per core)");
ABSL_FLAG(absl::Duration, quantum, sluice::SessionManager::Options{}.share_quantum,
          "the daemon's --share_quantum");
ABSL_FLAG(absl::Duration, credit, sluice::SessionManager::Options{}.share_credit,
          "the daemon's --share_credit");

namespace sluice::bench {
namespace {

// Client `name`'s token: each client is a tenant of its own.
std::string TokenOf(const std::string& name) { return "bench-token-" + name; }

// The tenants file: the light client, the heavy one, and `split` heavy clients of one session.
std::string TenantsToml(int split) {
  std::string toml;
  const auto add = [&](const std::string& name) {
    absl::StrAppend(&toml, "[tenants.", name, "]\ntokens = [\"",
                    FormatTokenDigest(DigestToken(TokenOf(name))), "\"]\n");
  };
  add("light");
  add("heavy");
  for (int s = 0; s < split; ++s) add("heavy-" + std::to_string(s));
  return toml;
}

// Client `name`'s options: pipelined, as `sluice solve --server` runs (allocations and
// dispatches without reads do not wait for their replies).
RemoteDispatch::Options As(const std::string& address, const std::string& name) {
  RemoteDispatch::Options o{.target = address, .client_name = name, .pipelined = true};
  o.credentials.token = TokenOf(name);
  return o;
}

struct Figures {
  double solve_s = 0;  // median
  double read_p50_us = 0;
  double read_p99_us = 0;
  bool ok = false;
};

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// The light client: its solves and its reads, timed one by one.
Figures MeasureLight(const std::string& address, const ifds::Problem& problem,
                     uint64_t expected_edges) {
  Figures f;
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> light =
      RemoteDispatch::Connect(As(address, "light"));
  if (!light.ok()) return f;
  std::vector<double> solves;
  for (int i = 0; i < absl::GetFlag(FLAGS_solves); ++i) {
    ifds::ResidentStats stats;
    const absl::Time start = absl::Now();
    if (!ifds::SolveResident(**light, problem, {}, &stats).ok()) return f;
    solves.push_back(absl::ToDoubleSeconds(absl::Now() - start));
    if (stats.path_edges != expected_edges) return f;
  }
  absl::StatusOr<Resource> buffer = (*light)->Allocate(64 << 10);
  if (!buffer.ok()) return f;
  std::vector<double> reads;
  std::vector<uint8_t> word;
  for (int i = 0; i < absl::GetFlag(FLAGS_reads); ++i) {
    const absl::Time start = absl::Now();
    if (!(*light)->DownloadRangeInto(*buffer, 4 * (i % 1024), 4, &word).ok()) return f;
    reads.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  f.solve_s = Percentile(solves, 0.5);
  f.read_p50_us = Percentile(reads, 0.5);
  f.read_p99_us = Percentile(reads, 0.99);
  f.ok = true;
  return f;
}

// Heavy load: `sessions` threads, each solving `problem` on its own session over and over
// until stopped; `one_client` makes them all one client's (the tenant "heavy"), or each a
// client of its own ("heavy-0" and so on).
class HeavyLoad {
 public:
  HeavyLoad(const std::string& address, const ifds::Problem& problem, int sessions,
            bool one_client) {
    for (int s = 0; s < sessions; ++s) {
      const std::string name = one_client ? "heavy" : "heavy-" + std::to_string(s);
      threads_.emplace_back([this, address, &problem, name] {
        absl::StatusOr<std::unique_ptr<RemoteDispatch>> d =
            RemoteDispatch::Connect(As(address, name));
        if (!d.ok()) {
          failed_ = true;
          return;
        }
        connected_.fetch_add(1);
        while (!stop_.load()) {
          if (!ifds::SolveResident(**d, problem).ok()) failed_ = true;
          solves_.fetch_add(1);
        }
      });
    }
  }
  // Waits until every session is connected and busy (bounded).
  bool Busy(int sessions) const {
    const absl::Time until = absl::Now() + absl::Seconds(60);
    while (connected_.load() < sessions && !failed_.load() && absl::Now() < until) {
      std::this_thread::yield();
    }
    return connected_.load() == sessions && !failed_.load();
  }
  // Stops and joins; false if any solve failed.
  bool Stop() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
    return !failed_.load();
  }
  uint64_t solves() const { return solves_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  std::atomic<int> connected_{0};
  std::atomic<uint64_t> solves_{0};
  std::vector<std::thread> threads_;
};

void Print(const char* what, const Figures& f, const Figures& base) {
  std::printf("%-34s solve %7.3f s (%5.2fx)  read p50 %8.1f us (%5.2fx)  p99 %8.1f us (%5.2fx)\n",
              what, f.solve_s, f.solve_s / base.solve_s, f.read_p50_us,
              f.read_p50_us / base.read_p50_us, f.read_p99_us, f.read_p99_us / base.read_p99_us);
}

int Main() {
  // Seeded, as every generated problem: the same problems in every run.
  ifds::GeneratorOptions small;  // the light client's job
  small.seed = 7;
  small.procedures = absl::GetFlag(FLAGS_light_procedures);
  small.facts = 16;
  ifds::GeneratorOptions medium;  // each heavy session's job
  medium.seed = 11;
  medium.procedures = 1000;
  medium.facts = 64;
  medium.nodes_per_procedure = 16;
  absl::StatusOr<ifds::Problem> light_problem = ifds::Generate(small);
  absl::StatusOr<ifds::Problem> heavy_problem = ifds::Generate(medium);
  if (!light_problem.ok() || !heavy_problem.ok()) return 1;

  absl::StatusOr<std::shared_ptr<CpuDevice>> device =
      CpuDevice::Create({.threads = absl::GetFlag(FLAGS_device_threads)});
  if (!device.ok()) return 1;
  DaemonOptions options;
  options.listen = "127.0.0.1:0";
  options.sessions.share_quantum = absl::GetFlag(FLAGS_quantum);
  options.sessions.share_credit = absl::GetFlag(FLAGS_credit);
  absl::StatusOr<std::shared_ptr<const TenantTable>> tenants =
      TenantTable::Parse(TenantsToml(absl::GetFlag(FLAGS_heavy_sessions)), "bench");
  if (!tenants.ok()) {
    std::fprintf(stderr, "%s\n", tenants.status().ToString().c_str());
    return 1;
  }
  options.streams.tenants = *tenants;
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(*device, options);
  if (!daemon.ok()) {
    std::fprintf(stderr, "%s\n", daemon.status().ToString().c_str());
    return 1;
  }
  const std::string address = (*daemon)->address();

  // The light client's answer, checked in every measurement.
  uint64_t expected_edges = 0;
  {
    absl::StatusOr<std::unique_ptr<RemoteDispatch>> warm =
        RemoteDispatch::Connect(As(address, "light"));
    ifds::ResidentStats stats;
    if (!warm.ok() || !ifds::SolveResident(**warm, *light_problem, {}, &stats).ok()) return 1;
    expected_edges = stats.path_edges;
  }

  const int sessions = absl::GetFlag(FLAGS_heavy_sessions);
  std::printf("fair shares: a light client (small solve of %llu path edges, 4-byte reads) "
              "against %d heavy sessions,\nCPU device with %d threads, quantum %s, credit %s\n",
              static_cast<unsigned long long>(expected_edges), sessions,
              absl::GetFlag(FLAGS_device_threads) > 0
                  ? absl::GetFlag(FLAGS_device_threads)
                  : static_cast<int>(std::thread::hardware_concurrency()),
              absl::FormatDuration(absl::GetFlag(FLAGS_quantum)).c_str(),
              absl::FormatDuration(absl::GetFlag(FLAGS_credit)).c_str());

  const Figures unloaded = MeasureLight(address, *light_problem, expected_edges);
  if (!unloaded.ok) return 1;
  Print("unloaded", unloaded, unloaded);

  Figures loaded[2];
  for (int one_client = 1; one_client >= 0; --one_client) {
    HeavyLoad load(address, *heavy_problem, sessions, one_client == 1);
    if (!load.Busy(sessions)) {
      load.Stop();
      std::fprintf(stderr, "the heavy load could not start\n");
      return 1;
    }
    const uint64_t solves_before = load.solves();
    Figures f = MeasureLight(address, *light_problem, expected_edges);
    const uint64_t heavy_solves = load.solves() - solves_before;
    if (!load.Stop() || !f.ok) {
      std::fprintf(stderr, "a solve failed or gave a wrong answer\n");
      return 1;
    }
    loaded[one_client] = f;
    const std::string what = one_client == 1 ? "1 heavy client of " + std::to_string(sessions) +
                                                   " sessions"
                                             : std::to_string(sessions) + " heavy clients";
    Print(what.c_str(), f, unloaded);
    std::printf("%-34s (the heavy load finished %llu solves meanwhile)\n", "",
                static_cast<unsigned long long>(heavy_solves));
  }
  const double solve_ratio = loaded[1].solve_s / unloaded.solve_s;
  const double read_ratio = loaded[1].read_p50_us / unloaded.read_p50_us;
  std::printf("light client under 1 heavy client of %d sessions: solve %.2fx, read p50 %.2fx "
              "[target <= 2x] %s\n",
              sessions, solve_ratio, read_ratio,
              solve_ratio <= 2 && read_ratio <= 2 ? "met" : "MISSED");
  JsonOut& json = JsonOut::Get();
  json.Set("heavy_sessions", sessions);
  json.Set("light_solve_one_client_ratio", solve_ratio);
  json.Set("light_read_p50_one_client_ratio", read_ratio);
  json.Set("light_solve_many_clients_ratio", loaded[0].solve_s / unloaded.solve_s);
  json.Set("light_read_p50_many_clients_ratio", loaded[0].read_p50_us / unloaded.read_p50_us);
  (*daemon)->Shutdown(absl::Seconds(5));
  return json.Write(absl::GetFlag(FLAGS_json)) ? 0 : 1;
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return sluice::bench::Main();
}
