// How fast this host gives a process memory: the first write to each page of fresh memory in
// huge pages (internal::MapHugePages, what a reader's, a compiled problem's and the CPU
// device's large arrays get), in small pages, in small pages backed at once
// (internal::PopulatePages, the CPU device's mid-sized buffers), and in huge pages freed and
// mapped again (what the system hands back at once), against memset over written memory.
// Every host phase of `sluice solve` touches fresh memory, and on a virtual machine its cost
// moves from host to host and from hour to hour (docs/benchmarks.md): bench/run.sh runs this
// first, so that each run's end-to-end figures come with what memory cost at the time.
//
//   sluice_memory_bench [--mib=256] [--json=PATH]
#include <sys/mman.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/json_out.h"
#include "sluice/base/mapped_buffer.h"

ABSL_FLAG(int, mib, 256, "bytes of each kind of memory touched, in MiB");
ABSL_FLAG(std::string, json, "", "also write the figures, by name, to this JSON file");

namespace sluice::bench {
namespace {

constexpr size_t kPage = 4096;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// GB/s of `bytes` made ready since `start`.
double GbsSince(size_t bytes, std::chrono::steady_clock::time_point start) {
  return static_cast<double>(bytes) / Seconds(std::chrono::steady_clock::now() - start) / 1e9;
}

// Writes one byte to each 4 KiB page of `bytes` at `data`.
void Touch(uint8_t* data, size_t bytes) {
  for (size_t at = 0; at < bytes; at += kPage) data[at] = static_cast<uint8_t>(at >> 12);
}

// GB/s of Touch.
double TouchGbs(uint8_t* data, size_t bytes) {
  const auto start = std::chrono::steady_clock::now();
  Touch(data, bytes);
  return GbsSince(bytes, start);
}

int Main() {
  const int mib = absl::GetFlag(FLAGS_mib);
  if (mib <= 0 || mib > (1 << 16)) {
    std::fprintf(stderr, "sluice_memory_bench: --mib must be 1 to 65536\n");
    return 2;
  }
  const size_t bytes = static_cast<size_t>(mib) << 20;
  // Fresh memory first (huge pages, then small), while nothing this process freed can be
  // handed back; then the huge pages freed and mapped again.
  auto* huge = static_cast<uint8_t*>(internal::MapHugePages(bytes));
  auto* small = static_cast<uint8_t*>(internal::MapPages(bytes));
  auto* populated = static_cast<uint8_t*>(internal::MapPages(bytes));
  if (huge == nullptr || small == nullptr || populated == nullptr) {
    std::fprintf(stderr, "sluice_memory_bench: no memory for 3 x %d MiB\n", mib);
    return 1;
  }
  madvise(small, bytes, MADV_NOHUGEPAGE);
  madvise(populated, bytes, MADV_NOHUGEPAGE);
  const double fresh_huge = TouchGbs(huge, bytes);
  const double fresh_small = TouchGbs(small, bytes);
  const auto populating = std::chrono::steady_clock::now();
  const bool backed = internal::PopulatePages(populated, bytes);
  Touch(populated, bytes);
  const double populated_small = GbsSince(bytes, populating);
  internal::UnmapPages(small, bytes);
  internal::UnmapPages(populated, bytes);
  internal::UnmapHugePages(huge, bytes);
  huge = static_cast<uint8_t*>(internal::MapHugePages(bytes));
  if (huge == nullptr) {
    std::fprintf(stderr, "sluice_memory_bench: no memory for %d MiB again\n", mib);
    return 1;
  }
  const double reused_huge = TouchGbs(huge, bytes);
  const auto setting = std::chrono::steady_clock::now();
  std::memset(huge, 0x5a, bytes);
  const double memset_gbs = GbsSince(bytes, setting);
  internal::UnmapHugePages(huge, bytes);

  std::printf("%d MiB of each, the first write to every 4 KiB page (GB/s of memory made ready):\n",
              mib);
  std::printf("  fresh memory in huge pages           %7.2f GB/s\n", fresh_huge);
  std::printf("  fresh memory in small pages          %7.2f GB/s\n", fresh_small);
  std::printf("  small pages backed at once, written  %7.2f GB/s%s\n", populated_small,
              backed ? "" : " (not populated: the system refused; faulted instead)");
  std::printf("  huge pages freed and mapped again    %7.2f GB/s\n", reused_huge);
  std::printf("  memset over written memory           %7.2f GB/s\n", memset_gbs);
  std::printf("fresh huge / fresh small pages: %.2fx; fresh huge / mapped again: %.2fx\n",
              fresh_huge / fresh_small, fresh_huge / reused_huge);
  JsonOut& json = JsonOut::Get();
  json.Set("mib", mib);
  json.Set("fresh_huge_page_gbs", fresh_huge);
  json.Set("fresh_small_page_gbs", fresh_small);
  json.Set("populated_small_page_gbs", populated_small);
  json.Set("reused_huge_page_gbs", reused_huge);
  json.Set("memset_gbs", memset_gbs);
  json.Set("fresh_huge_over_fresh_small_ratio", fresh_huge / fresh_small);
  if (!json.Write(absl::GetFlag(FLAGS_json))) {
    std::fprintf(stderr, "sluice_memory_bench: cannot write %s\n",
                 absl::GetFlag(FLAGS_json).c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return sluice::bench::Main();
}
