// A console reporter that also remembers each benchmark's throughput and time, so a benchmark
// program can print ratios against a baseline measured in the same run.
#ifndef SLUICE_BENCH_RATIO_REPORTER_H_
#define SLUICE_BENCH_RATIO_REPORTER_H_

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

namespace sluice::bench {

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  struct Result {
    double bytes_per_second = 0;
    double real_ns = 0;  // per iteration
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      Result& r = results_[run.benchmark_name()];
      auto it = run.counters.find("bytes_per_second");
      if (it != run.counters.end()) r.bytes_per_second = it->second.value;
      r.real_ns = run.GetAdjustedRealTime() *
                  (run.time_unit == benchmark::kMicrosecond   ? 1e3
                   : run.time_unit == benchmark::kMillisecond ? 1e6
                   : run.time_unit == benchmark::kSecond      ? 1e9
                                                              : 1.0);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  const Result* Find(const std::string& name) const {
    auto it = results_.find(name);
    return it == results_.end() ? nullptr : &it->second;
  }

  // Prints "label: a / b = ratio" for throughput (higher is better).
  void PrintThroughputRatio(const std::string& label, const std::string& measured,
                            const std::string& baseline) const {
    const Result* m = Find(measured);
    const Result* b = Find(baseline);
    if (m == nullptr || b == nullptr || b->bytes_per_second == 0) return;
    std::printf("%-44s %9.2f GB/s vs %9.2f GB/s  ratio %.2fx\n", label.c_str(),
                m->bytes_per_second / 1e9, b->bytes_per_second / 1e9,
                m->bytes_per_second / b->bytes_per_second);
  }

  // Prints "label: a ns vs b ns = ratio" for latency (lower is better).
  void PrintTimeRatio(const std::string& label, const std::string& measured,
                      const std::string& baseline) const {
    const Result* m = Find(measured);
    const Result* b = Find(baseline);
    if (m == nullptr || b == nullptr || b->real_ns == 0) return;
    std::printf("%-44s %9.0f ns vs %9.0f ns    ratio %.2fx\n", label.c_str(), m->real_ns,
                b->real_ns, m->real_ns / b->real_ns);
  }

 private:
  std::map<std::string, Result> results_;
};

}  // namespace sluice::bench

#endif  // SLUICE_BENCH_RATIO_REPORTER_H_
