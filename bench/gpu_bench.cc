// CUDA against CPU in one run, on the machine's GPU and its CPU cores:
//   IFDS solves of the same generated problems on both devices (seconds, path edges per
//   second, ratio; the largest has at least 10 million path edges; answers compared);
//   windows that end on the device (loop guard) against windows that always run their length;
//   a window of a repeated group as a graph loop, as one graph launch per iteration and as the
//   same launches enqueued one by one;
//   UploadMany throughput against the pinned host-to-device bandwidth measured here.
// Prints a table; with --summary=FILE also writes it there.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sluice/base/status_macros.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/engine/cuda_device.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"

ABSL_FLAG(std::string, summary, "", "also write the report to this file");
ABSL_FLAG(bool, quick, false, "smaller problems (for a dry run)");
ABSL_FLAG(bool, sanitize_solve, false,
          "only solve one small problem on the GPU and compare it with the reference solver "
          "(what tests/gpu/run.sh runs under compute-sanitizer)");

namespace sluice::bench {
namespace {

// The --summary file, appended to line by line so that a run cut short keeps what it printed.
FILE* summary = nullptr;

template <typename... Args>
void Out(const absl::FormatSpec<Args...>& format, const Args&... args) {
  const std::string line = absl::StrFormat(format, args...);
  for (FILE* f : {stdout, summary}) {
    if (f == nullptr) continue;
    std::fputs(line.c_str(), f);
    std::fflush(f);
  }
}

// Says which part of the bench failed and why; the exit code of a failed bench.
int Failed(const char* what, const absl::Status& status) {
  Out("FAILED: %s: %s\n", what, status.ToString());
  return 1;
}

double Seconds(absl::Time start) { return absl::ToDoubleSeconds(absl::Now() - start); }

struct Solved {
  double seconds = 0;
  ifds::ResidentStats stats;
  ifds::Solution solution;
  absl::Status status;
};

Solved Solve(ResidentDispatch& d, const ifds::Problem& p, const ifds::ResidentOptions& o = {}) {
  Solved s;
  const absl::Time start = absl::Now();
  absl::StatusOr<ifds::Solution> solution = ifds::SolveResident(d, p, o, &s.stats);
  s.seconds = Seconds(start);
  s.status = solution.status();
  if (solution.ok()) s.solution = *std::move(solution);
  return s;
}

// Host-to-device bandwidth of cudaMemcpy (best of five, GB/s) from `host`, pinned or pageable.
double CopyBandwidth(const void* host, size_t bytes) {
  void* device = nullptr;
  if (cudaMalloc(&device, bytes) != cudaSuccess) return 0;
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    const absl::Time start = absl::Now();
    if (cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice) != cudaSuccess) break;
    best = std::max(best, bytes / Seconds(start) / 1e9);
  }
  cudaFree(device);
  return best;
}

// Host-to-device bandwidth from pinned memory: the ceiling for uploads.
double PinnedBandwidth(size_t bytes) {
  void* host = nullptr;
  if (cudaHostAlloc(&host, bytes, cudaHostAllocDefault) != cudaSuccess) return 0;
  std::memset(host, 1, bytes);
  const double best = CopyBandwidth(host, bytes);
  cudaFreeHost(host);
  return best;
}

int Main() {
  absl::StatusOr<std::shared_ptr<Device>> cuda = CreateCudaDevice({});
  if (!cuda.ok()) {
    Out("no usable GPU: %s\n", cuda.status().ToString());
    return 2;
  }
  if (absl::GetFlag(FLAGS_sanitize_solve)) {
    auto dispatch = LocalDispatch::Create({.device = *cuda});
    ifds::GeneratorOptions o;
    o.procedures = 30;
    o.facts = 20;
    o.recursion = 0.5;
    absl::StatusOr<ifds::Problem> problem = ifds::Generate(o);
    if (!dispatch.ok()) return Failed("dispatch on the GPU", dispatch.status());
    if (!problem.ok()) return Failed("problem generation", problem.status());
    ifds::ResidentOptions options;
    options.initial_capacity = 8;  // every growth path, under the sanitizer too
    absl::StatusOr<ifds::Solution> got = ifds::SolveResident(**dispatch, *problem, options);
    if (!got.ok()) return Failed("resident solve on the GPU", got.status());
    const bool equal = *got == ifds::SolveReference(*problem);
    Out("sanitized solve: %s\n", equal ? "matches the reference solver" : "FAILED");
    return equal ? 0 : 1;
  }
  absl::StatusOr<std::shared_ptr<CpuDevice>> cpu = CpuDevice::Create({});
  if (!cpu.ok()) return Failed("CPU device", cpu.status());
  auto gpu_dispatch = LocalDispatch::Create({.device = *cuda});
  auto cpu_dispatch = LocalDispatch::Create({.device = *cpu});
  if (!gpu_dispatch.ok()) return Failed("dispatch on the GPU", gpu_dispatch.status());
  if (!cpu_dispatch.ok()) return Failed("dispatch on the CPU", cpu_dispatch.status());
  ResidentDispatch& g = **gpu_dispatch;
  ResidentDispatch& c = **cpu_dispatch;
  Out("GPU: %s [%s]\n     %s\nCPU: %s\n\n", (*cuda)->info().name, (*cuda)->info().id,
      (*cuda)->info().version, (*cpu)->info().name);

  // ---- IFDS ----
  const bool quick = absl::GetFlag(FLAGS_quick);
  struct Size {
    const char* name;
    uint32_t procedures, facts, nodes;
  };
  const std::vector<Size> sizes =
      quick ? std::vector<Size>{{"small", 100, 16, 12}, {"medium", 400, 40, 12}}
            : std::vector<Size>{{"small", 400, 40, 12},
                                {"medium", 1000, 64, 16},
                                {"large", 2500, 64, 16},
                                {"10M+", 5500, 64, 16}};
  Out("IFDS resident solver, CUDA vs CPU device (same problems, answers compared)\n");
  Out("%-7s %12s | %9s %10s | %9s %10s | %8s %7s\n", "size", "path edges", "cpu s", "cpu PE/s",
      "cuda s", "cuda PE/s", "speedup", "windows");
  bool all_equal = true;
  double largest_speedup = 0;
  uint64_t largest_edges = 0;
  std::vector<ifds::Problem> problems;
  for (const Size& size : sizes) {
    ifds::GeneratorOptions o;
    o.procedures = size.procedures;
    o.facts = size.facts;
    o.nodes_per_procedure = size.nodes;
    absl::StatusOr<ifds::Problem> problem = ifds::Generate(o);
    if (!problem.ok()) return Failed("problem generation", problem.status());
    if (problems.empty() || &size == &sizes[1]) problems.push_back(*problem);
    // Warm-ups on both devices: the GPU's context, module load and first allocations; the
    // CPU device's first touches of fresh memory.
    Solve(g, *problem);
    Solve(c, *problem);
    const Solved on_gpu = Solve(g, *problem);
    const Solved on_cpu = Solve(c, *problem);
    if (!on_gpu.status.ok() || !on_cpu.status.ok()) {
      Out("%s: solve failed: gpu %s, cpu %s\n", size.name, on_gpu.status.ToString(),
          on_cpu.status.ToString());
      return 1;
    }
    const bool equal = on_gpu.solution == on_cpu.solution;
    all_equal = all_equal && equal;
    const double pe = static_cast<double>(on_gpu.stats.path_edges);
    Out("%-7s %12llu | %9.3f %9.2fM | %9.3f %9.2fM | %7.1fx %7u%s\n", size.name,
        static_cast<unsigned long long>(on_gpu.stats.path_edges), on_cpu.seconds,
        pe / on_cpu.seconds / 1e6, on_gpu.seconds, pe / on_gpu.seconds / 1e6,
        on_cpu.seconds / on_gpu.seconds, on_gpu.stats.windows, equal ? "" : "  ANSWERS DIFFER");
    Out("        cuda phases: set-up %.3f s, windows %.3f s (%u iterations), growth %.3f s "
        "(%u), results %.3f s; cpu: %.3f / %.3f / %.3f / %.3f s\n",
        on_gpu.stats.setup_seconds, on_gpu.stats.window_seconds, on_gpu.stats.iterations,
        on_gpu.stats.growth_seconds, on_gpu.stats.growths, on_gpu.stats.results_seconds,
        on_cpu.stats.setup_seconds, on_cpu.stats.window_seconds, on_cpu.stats.growth_seconds,
        on_cpu.stats.results_seconds);
    largest_speedup = on_cpu.seconds / on_gpu.seconds;
    largest_edges = on_gpu.stats.path_edges;
  }
  Out("target: a problem of >= 10M path edges at least 10x faster on the GPU: %s (%.1fx at %llu)\n\n",
      largest_edges >= 10000000 && largest_speedup >= 10 ? "met" : "MISSED", largest_speedup,
      static_cast<unsigned long long>(largest_edges));

  // ---- Windows ended on the device against full windows ----
  {
    const ifds::Problem& medium = problems.back();
    ifds::ResidentOptions full;
    full.early_exit = false;
    Solved guarded, unguarded;
    guarded.seconds = unguarded.seconds = 1e9;
    for (int r = 0; r < 3; ++r) {
      Solved a = Solve(g, medium), b = Solve(g, medium, full);
      if (!a.status.ok()) return Failed("guarded solve on the GPU", a.status);
      if (!b.status.ok()) return Failed("unguarded solve on the GPU", b.status);
      all_equal = all_equal && a.solution == b.solution;
      if (a.seconds < guarded.seconds) guarded = std::move(a);
      if (b.seconds < unguarded.seconds) unguarded = std::move(b);
    }
    Out("medium problem on the GPU: windows ended on the device %.3f s (%u iterations), full "
        "windows %.3f s (%u iterations; idle passes find empty deltas, and tables fill until an "
        "insert fails): %.2fx\n\n",
        guarded.seconds, guarded.stats.iterations, unguarded.seconds, unguarded.stats.iterations,
        unguarded.seconds / guarded.seconds);
  }

  // ---- Graph loops against one graph launch per iteration and against plain launches ----
  {
    constexpr uint32_t kIterations = 2000;
    constexpr int kStepsPerIteration = 6;
    absl::StatusOr<std::shared_ptr<Device>> per_iteration =
        CreateCudaDevice({.graph_loops = false});
    if (!per_iteration.ok()) return Failed("per-iteration CUDA device", per_iteration.status());
    auto replay_dispatch = LocalDispatch::Create({.device = *per_iteration});
    if (!replay_dispatch.ok()) return Failed("per-iteration dispatch", replay_dispatch.status());
    const Program add{"atomic_add_u32", {0, 1}};
    // Seconds for one window on `d`: as a repeated group, or (unrolled) as a plain sequence.
    const auto window = [&](ResidentDispatch& d, bool unrolled) -> absl::StatusOr<double> {
      ASSIGN_OR_RETURN(Resource counter, d.Allocate(64));
      const std::vector<Step> group(kStepsPerIteration, Step{&add, {&counter, 1}, std::nullopt});
      std::vector<Step> all;
      for (uint32_t i = 0; unrolled && i < kIterations; ++i) {
        all.insert(all.end(), group.begin(), group.end());
      }
      double best = 1e9;
      for (int r = 0; r < 3; ++r) {
        const absl::Time start = absl::Now();
        RETURN_IF_ERROR(
            unrolled ? d.DispatchSequenceReadRangesInto(all, {}, {})
                     : d.DispatchRepeatedSequenceReadRangesInto({}, group, kIterations, {}, {}));
        best = std::min(best, Seconds(start));
      }
      RETURN_IF_ERROR(d.Free(counter));
      return best / kIterations * 1e6;
    };
    const absl::StatusOr<double> loop_or = window(g, false);
    if (!loop_or.ok()) return Failed("window as a graph loop", loop_or.status());
    const absl::StatusOr<double> per_launch_or = window(**replay_dispatch, false);
    if (!per_launch_or.ok()) {
      return Failed("window as one graph launch per iteration", per_launch_or.status());
    }
    const absl::StatusOr<double> plain_or = window(g, true);
    if (!plain_or.ok()) return Failed("window as plain launches", plain_or.status());
    const double loop = *loop_or, per_launch = *per_launch_or, plain = *plain_or;
    Out("window of %u iterations x %d steps, us per iteration: graph loops (%s) %.2f, one graph "
        "launch per iteration %.2f (%.2fx), plain launches %.2f (%.2fx)\n\n",
        kIterations, kStepsPerIteration,
        (*cuda)->info().version.find("graph-loops") != std::string::npos ? "on" : "UNAVAILABLE",
        loop, per_launch, per_launch / loop, plain, plain / loop);
  }

  // ---- Upload throughput ----
  {
    const size_t bytes = size_t{512} << 20;
    const double pinned = PinnedBandwidth(bytes);
    std::vector<uint8_t> data(bytes, 3);
    absl::StatusOr<Resource> buffer = g.Allocate(bytes);
    if (!buffer.ok()) return Failed("allocation of the upload buffer", buffer.status());
    double best = 0;
    for (int r = 0; r < 5; ++r) {
      const absl::Time start = absl::Now();
      if (absl::Status s = g.UploadMany({{*buffer, data}}); !s.ok()) return Failed("upload", s);
      best = std::max(best, bytes / Seconds(start) / 1e9);
    }
    Out("upload of 512 MiB from pageable memory: %.1f GB/s; pinned host-to-device: %.1f GB/s: "
        "%.2fx [target >= 0.50x] %s\n",
        best, pinned, best / pinned, best / pinned >= 0.5 ? "met" : "MISSED");
    // The alternative the staging ring competes with: the driver's own staging of pageable
    // memory (plain cudaMemcpy from the same vector).
    const double driver = CopyBandwidth(data.data(), bytes);
    Out("  (cudaMemcpy straight from the pageable vector: %.1f GB/s, %.2fx of pinned)\n", driver,
        driver / pinned);
  }
  Out("answers: %s\n", all_equal ? "CUDA and CPU agree on every problem" : "DIFFER");
  return all_equal ? 0 : 1;
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string path = absl::GetFlag(FLAGS_summary);
  if (!path.empty()) {
    sluice::bench::summary = std::fopen(path.c_str(), "a");
    if (sluice::bench::summary == nullptr) {
      std::fprintf(stderr, "cannot open %s for appending\n", path.c_str());
      return 2;
    }
  }
  const int rc = sluice::bench::Main();
  if (sluice::bench::summary != nullptr) std::fclose(sluice::bench::summary);
  return rc;
}
