// IFDS solvers on generated problems of three sizes, in one run:
//   path edges per second of the reference solver and of the resident solver on the CPU device
//   (LocalDispatch), as ratios, with the peak memory of each (each solve runs in a process of its
//   own, started afresh, which loads the problem from a file as `sluice solve` does: its peak
//   RSS is its own, and it inherits no memory from the process that generated the problem), and
//   the resident solver through sluiced on loopback against the same solve in-process
//   (target: at most 1.10x; docs/benchmarks.md), and windows that end on the device (loop guard) against windows
//   that always run their length.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/json_out.h"
#include "sluice/base/heap.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/ifds/binary_format.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"
#include "sluice/server/grpc/daemon.h"

ABSL_FLAG(int, repeats, 3,
          "solves of each solver per size, the two alternated (the fastest of each is kept)");
ABSL_FLAG(bool, large, true, "include the large problem");
ABSL_FLAG(std::string, json, "", "also write the figures, by name, to this JSON file");
ABSL_FLAG(std::string, solve_child, "",
          "internal: solve --problem_file with this solver (reference or resident), print the "
          "measurement and exit");
ABSL_FLAG(std::string, problem_file, "", "internal: the problem a --solve_child solves");

namespace sluice::bench {
namespace {

struct Size {
  const char* name;
  ifds::GeneratorOptions options;
};

struct Measurement {
  double seconds = 0;
  uint64_t path_edges = 0;
  uint64_t device_peak = 0;
  uint64_t max_rss = 0;  // bytes
  bool ok = false;
};

// One solve, timed, in this process.
Measurement Solve(const std::string& solver, const ifds::Problem& p) {
  Measurement m;
  if (solver == "reference") {
    const absl::Time start = absl::Now();
    ifds::ReferenceStats stats;
    ifds::SolveReference(p, &stats);
    m.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    m.path_edges = stats.path_edges;
    m.ok = true;
    return m;
  }
  auto dispatch = LocalDispatch::CreateCpu();
  if (!dispatch.ok()) return m;
  const absl::Time start = absl::Now();
  ifds::ResidentStats stats;
  if (!ifds::SolveResident(**dispatch, p, {}, &stats).ok()) return m;
  m.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  m.path_edges = stats.path_edges;
  m.device_peak = stats.peak_device_bytes;
  m.ok = true;
  return m;
}

// --solve_child: loads the problem, solves it and prints "seconds path_edges device_peak
// peak_rss" (its own peak, PeakResidentBytes: the parent's wait4 would count the parent's pages,
// which the forked child held until its exec).
int SolveChild(const std::string& solver, const std::string& path) {
  absl::StatusOr<ifds::Problem> problem = ifds::LoadProblem(path);
  if (!problem.ok()) {
    std::fprintf(stderr, "%s\n", problem.status().ToString().c_str());
    return 1;
  }
  const Measurement m = Solve(solver, *problem);
  if (!m.ok) return 1;
  std::printf("%.9f %llu %llu %llu\n", m.seconds, static_cast<unsigned long long>(m.path_edges),
              static_cast<unsigned long long>(m.device_peak),
              static_cast<unsigned long long>(PeakResidentBytes()));
  return 0;
}

// Runs `solver` on the problem in `path` in a new process (this binary, exec'd afresh) and
// returns its time, path edges and peak RSS.
Measurement InChild(const std::string& solver, const std::string& path) {
  // Everything the child needs is built before the fork.
  const std::string solver_flag = "--solve_child=" + solver;
  const std::string problem_flag = "--problem_file=" + path;
  char* const argv[] = {const_cast<char*>("sluice_ifds_bench"),
                        const_cast<char*>(solver_flag.c_str()),
                        const_cast<char*>(problem_flag.c_str()), nullptr};
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (dup2(fds[1], STDOUT_FILENO) < 0) _exit(127);
    close(fds[1]);
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buffer[256];
  for (ssize_t got; (got = read(fds[0], buffer, sizeof(buffer))) > 0;) out.append(buffer, got);
  close(fds[0]);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return {};
  Measurement m;
  unsigned long long edges = 0, peak = 0, rss = 0;
  m.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
         std::sscanf(out.c_str(), "%lf %llu %llu %llu", &m.seconds, &edges, &peak, &rss) == 4;
  m.path_edges = edges;
  m.device_peak = peak;
  m.max_rss = rss;
  return m;
}

// A folder for the problem files, removed with what it holds when this goes.
class ProblemFiles {
 public:
  ProblemFiles() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                          "/sluice-ifds-bench.XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
  }
  ~ProblemFiles() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  ProblemFiles(const ProblemFiles&) = delete;
  ProblemFiles& operator=(const ProblemFiles&) = delete;

  // Writes `problem` as NAME.bin; its path, or "" when it could not be written.
  std::string Write(const std::string& name, const ifds::Problem& problem) const {
    if (dir_.empty()) return "";
    const std::string path = dir_ + "/" + name + ".bin";
    const std::string bytes = ifds::WriteBinary(problem);
    std::ofstream file(path, std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return file.good() ? path : "";
  }

 private:
  std::string dir_;
};

Measurement Best(const std::vector<Measurement>& runs) {
  Measurement best = runs.front();
  for (const Measurement& m : runs) {
    if (m.ok && (!best.ok || m.seconds < best.seconds)) best = m;
  }
  return best;
}

double Mib(uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

int Main() {
  std::vector<Size> sizes(3);
  sizes[0].name = "small";
  sizes[0].options.procedures = 400;
  sizes[0].options.facts = 40;
  sizes[1].name = "medium";
  sizes[1].options.procedures = 1000;
  sizes[1].options.facts = 64;
  sizes[1].options.nodes_per_procedure = 16;
  sizes[2].name = "large";
  sizes[2].options.procedures = 2500;
  sizes[2].options.facts = 64;
  sizes[2].options.nodes_per_procedure = 16;
  if (!absl::GetFlag(FLAGS_large)) sizes.pop_back();

  std::printf("IFDS: reference solver vs resident solver on the CPU device (%d threads)\n",
              static_cast<int>(std::thread::hardware_concurrency()));
  std::printf("%-7s %11s | %8s %9s %8s | %8s %9s %8s %9s | %7s %7s\n", "size", "path edges",
              "ref s", "ref PE/s", "ref RSS", "res s", "res PE/s", "res RSS", "dev peak",
              "speed", "memory");
  std::vector<ifds::Problem> problems;
  const ProblemFiles files;
  for (const Size& size : sizes) {
    absl::StatusOr<ifds::Problem> problem = ifds::Generate(size.options);
    if (!problem.ok()) return 1;
    const std::string path = files.Write(size.name, *problem);
    if (path.empty()) {
      std::printf("%s: could not write the problem file\n", size.name);
      return 1;
    }
    // A shared host or VM can drift in speed by a third within minutes: one solve of each would
    // be a coin toss, so every size takes the best of `repeats`.
    const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
    std::vector<Measurement> ref, res;
    for (int r = 0; r < repeats; ++r) {
      ref.push_back(InChild("reference", path));
      res.push_back(InChild("resident", path));
    }
    const Measurement a = Best(ref), b = Best(res);
    if (!a.ok || !b.ok || a.path_edges != b.path_edges) {
      std::printf("%s: a solve failed or the solvers disagree\n", size.name);
      return 1;
    }
    std::printf("%-7s %11llu | %8.3f %8.2fM %7.0fM | %8.3f %8.2fM %7.0fM %8.0fM | %6.2fx %6.2fx\n",
                size.name, static_cast<unsigned long long>(a.path_edges), a.seconds,
                a.path_edges / a.seconds / 1e6, Mib(a.max_rss), b.seconds,
                b.path_edges / b.seconds / 1e6, Mib(b.max_rss), Mib(b.device_peak),
                a.seconds / b.seconds, static_cast<double>(b.max_rss) / a.max_rss);
    problems.push_back(*std::move(problem));
    JsonOut& json = JsonOut::Get();
    const std::string key = size.name;
    json.Set(key + "_path_edges", static_cast<double>(a.path_edges));
    json.Set(key + "_reference_s", a.seconds);
    json.Set(key + "_resident_s", b.seconds);
    json.Set(key + "_resident_over_reference_speed_ratio", a.seconds / b.seconds);
    json.Set(key + "_resident_over_reference_rss_ratio", static_cast<double>(b.max_rss) / a.max_rss);
    json.Set(key + "_device_bytes_per_path_edge",
             static_cast<double>(b.device_peak) / static_cast<double>(a.path_edges));
  }
  std::printf("speed: resident PE/s over reference PE/s; memory: resident peak RSS over "
              "reference peak RSS (RSS includes the problem)\n\n");

  const ifds::Problem& medium = problems[1];
  // Early exit, in-process on the medium problem, before any daemon runs.
  absl::StatusOr<std::unique_ptr<LocalDispatch>> local_only = LocalDispatch::CreateCpu();
  if (!local_only.ok()) return 1;
  ifds::ResidentOptions full;
  full.early_exit = false;
  double guarded = 1e9, unguarded = 1e9;
  ifds::ResidentStats guarded_stats, unguarded_stats;
  for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
    absl::Time t = absl::Now();
    if (!ifds::SolveResident(**local_only, medium, {}, &guarded_stats).ok()) return 1;
    guarded = std::min(guarded, absl::ToDoubleSeconds(absl::Now() - t));
    t = absl::Now();
    if (!ifds::SolveResident(**local_only, medium, full, &unguarded_stats).ok()) return 1;
    unguarded = std::min(unguarded, absl::ToDoubleSeconds(absl::Now() - t));
  }
  std::printf("early exit: medium problem in-process, windows ended by the loop guard %.3f s "
              "(%u iterations) vs full windows %.3f s (%u iterations): %.3fx\n\n",
              guarded, guarded_stats.iterations, unguarded, unguarded_stats.iterations,
              unguarded / guarded);
  local_only->reset();

  // Remote against in-process, on the medium problem: no fork from here on (gRPC threads).
  absl::StatusOr<std::shared_ptr<CpuDevice>> device = CpuDevice::Create({});
  if (!device.ok()) return 1;
  DaemonOptions options;
  options.listen = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(*device, options);
  if (!daemon.ok()) return 1;
  absl::StatusOr<std::unique_ptr<LocalDispatch>> local = LocalDispatch::Create({.device = *device});
  // Pipelined (what `sluice solve --server` uses) and, as the baseline, every call waiting.
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> remote = RemoteDispatch::Connect(
      {.target = (*daemon)->address(), .client_name = "ifds-bench", .pipelined = true});
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> waiting =
      RemoteDispatch::Connect({.target = (*daemon)->address(), .client_name = "ifds-bench"});
  if (!local.ok() || !remote.ok() || !waiting.ok()) return 1;
  std::vector<double> local_s, remote_s, waiting_s;
  ifds::ResidentStats stats;
  uint64_t trips = 0, waiting_trips = 0;
  const auto solve_remote = [&](RemoteDispatch& d, std::vector<double>* seconds,
                                uint64_t* round_trips) {
    const uint64_t before = d.counters().round_trips;
    const absl::Time t = absl::Now();
    if (!ifds::SolveResident(d, medium, {}, &stats).ok()) return false;
    seconds->push_back(absl::ToDoubleSeconds(absl::Now() - t));
    *round_trips = d.counters().round_trips - before;
    return true;
  };
  for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
    absl::Time t = absl::Now();
    if (!ifds::SolveResident(**local, medium).ok()) return 1;
    local_s.push_back(absl::ToDoubleSeconds(absl::Now() - t));
    if (!solve_remote(**waiting, &waiting_s, &waiting_trips)) return 1;
    if (!solve_remote(**remote, &remote_s, &trips)) return 1;
  }
  const double l = *std::min_element(local_s.begin(), local_s.end());
  const double rm = *std::min_element(remote_s.begin(), remote_s.end());
  const double wt = *std::min_element(waiting_s.begin(), waiting_s.end());
  std::printf("remote: medium problem through sluiced on loopback vs in-process, same device\n");
  std::printf("  in-process %.3f s, through sluiced %.3f s: ratio %.3fx [target <= 1.10x] %s\n",
              l, rm, rm / l, rm / l <= 1.10 ? "met" : "MISSED");
  std::printf("  every call waiting (the baseline) %.3f s: pipelined/waiting %.3fx\n", wt,
              rm / wt);
  std::printf("  round trips %llu = %u windows + %llu [target <= windows + 5] %s; every call "
              "waiting %llu = windows + %llu (set-up, %u growths, results)\n",
              static_cast<unsigned long long>(trips), stats.windows,
              static_cast<unsigned long long>(trips - stats.windows),
              trips <= stats.windows + 5 ? "met" : "MISSED",
              static_cast<unsigned long long>(waiting_trips),
              static_cast<unsigned long long>(waiting_trips - stats.windows), stats.growths);

  JsonOut& json = JsonOut::Get();
  json.Set("early_exit_full_over_guarded_ratio", unguarded / guarded);
  json.Set("remote_over_in_process_solve_ratio", rm / l);
  json.Set("pipelined_over_waiting_solve_ratio", rm / wt);
  json.Set("remote_round_trips", static_cast<double>(trips));
  json.Set("remote_windows", stats.windows);
  json.Set("round_trips_over_windows_ratio", static_cast<double>(trips) / stats.windows);
  json.Set("waiting_round_trips", static_cast<double>(waiting_trips));
  remote->reset();
  waiting->reset();
  (*daemon)->Shutdown(absl::Seconds(5));
  return JsonOut::Get().Write(absl::GetFlag(FLAGS_json)) ? 0 : 1;
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string child = absl::GetFlag(FLAGS_solve_child);
  if (!child.empty()) {
    if (child != "reference" && child != "resident") return 2;
    return sluice::bench::SolveChild(child, absl::GetFlag(FLAGS_problem_file));
  }
  return sluice::bench::Main();
}
