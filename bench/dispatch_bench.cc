// Local dispatch benchmarks on the CPU device, each with its baseline in the same run:
//   upload and ranged-download throughput against plain memcpy of the same bytes;
//   per-dispatch overhead, and per-iteration cost inside a repeated sequence.
// Prints Google Benchmark's table, then a ratio table.
#include <cstring>
#include <memory>
#include <vector>

#include "bench/ratio_reporter.h"
#include "benchmark/benchmark.h"
#include "sluice/client/local_dispatch.h"

namespace sluice::bench {
namespace {

LocalDispatch& Dispatch() {
  static LocalDispatch* const dispatch = [] {
    absl::StatusOr<std::unique_ptr<LocalDispatch>> d = LocalDispatch::CreateCpu();
    if (!d.ok()) {
      std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
      std::abort();
    }
    return d->release();
  }();
  return *dispatch;
}

void BM_Memcpy(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(n, 1), dst(n, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_Upload(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(n, 1);
  Resource r = *Dispatch().Allocate(n);
  for (auto _ : state) {
    absl::Status s = Dispatch().Upload(r, src);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
  Dispatch().Free(r).IgnoreError();
}

void BM_DownloadRangeInto(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  // The range sits at the end of a buffer four times its size: only the range may move.
  Resource r = *Dispatch().Allocate(4 * n);
  std::vector<uint8_t> out;
  out.reserve(n);
  for (auto _ : state) {
    absl::Status s = Dispatch().DownloadRangeInto(r, 3 * n, n, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
  Dispatch().Free(r).IgnoreError();
}

void BM_DispatchOneThread(benchmark::State& state) {
  Resource r = *Dispatch().Allocate(4);
  const Program add{"atomic_add_u32", {0, 1}};
  for (auto _ : state) {
    absl::Status s = Dispatch().Dispatch(add, {&r, 1}, std::nullopt);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  Dispatch().Free(r).IgnoreError();
}

// One iteration of a repeated group of the same one-thread step; time is per iteration.
void BM_RepeatedIteration(benchmark::State& state) {
  constexpr uint32_t kRepeats = 1000;
  Resource r = *Dispatch().Allocate(4);
  const Program add{"atomic_add_u32", {0, 1}};
  const Step step{&add, {&r, 1}, std::nullopt};
  for (auto _ : state) {
    absl::Status s =
        Dispatch().DispatchRepeatedSequenceReadRangesInto({}, {&step, 1}, kRepeats, {}, {});
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kRepeats));
  Dispatch().Free(r).IgnoreError();
}

BENCHMARK(BM_Memcpy)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_Upload)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_DownloadRangeInto)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_DispatchOneThread);
BENCHMARK(BM_RepeatedIteration);

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  sluice::bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nRatios (same run, CPU device):\n");
  for (const char* size : {"4096", "1048576", "67108864"}) {
    const std::string s(size);
    reporter.PrintThroughputRatio("Upload / memcpy, " + s + " B", "BM_Upload/" + s,
                                  "BM_Memcpy/" + s);
    reporter.PrintThroughputRatio("DownloadRangeInto / memcpy, " + s + " B",
                                  "BM_DownloadRangeInto/" + s, "BM_Memcpy/" + s);
  }
  const sluice::bench::RatioReporter::Result* dispatch = reporter.Find("BM_DispatchOneThread");
  const sluice::bench::RatioReporter::Result* repeated = reporter.Find("BM_RepeatedIteration");
  if (dispatch != nullptr && repeated != nullptr) {
    std::printf("%-44s %9.0f ns per dispatch\n", "Dispatch overhead (one-thread kernel)",
                dispatch->real_ns);
    std::printf("%-44s %9.1f ns per iteration  (%.1fx cheaper than a dispatch)\n",
                "Repeated-sequence iteration", repeated->real_ns / 1000,
                dispatch->real_ns / (repeated->real_ns / 1000));
  }
  benchmark::Shutdown();
  return 0;
}
