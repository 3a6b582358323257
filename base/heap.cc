#include "sluice/base/heap.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

// tcmalloc's C interface, present only in processes linked with it (sluiced and the CLI are,
// unless built without it): a weak reference resolves to null elsewhere.
extern "C" void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));
extern "C" void MallocExtension_MarkThreadIdle(void) __attribute__((weak));

namespace sluice {

void ReleaseFreeHeapMemory() {
  if (MallocExtension_ReleaseFreeMemory != nullptr) {
    ReleaseThreadHeapCache();
    MallocExtension_ReleaseFreeMemory();
    return;
  }
  malloc_trim(0);
}

void ReleaseThreadHeapCache() {
  if (MallocExtension_MarkThreadIdle != nullptr) MallocExtension_MarkThreadIdle();
}

HeapTrimmer::HeapTrimmer(absl::Duration delay) : delay_(delay), thread_([this] { Run(); }) {}

HeapTrimmer::~HeapTrimmer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void HeapTrimmer::Poke() {
  absl::MutexLock lock(&mu_);
  pending_ = true;
  due_ = absl::Now() + delay_;
}

uint64_t HeapTrimmer::trims() const {
  absl::MutexLock lock(&mu_);
  return trims_;
}

void HeapTrimmer::Run() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    mu_.Await(absl::Condition(
        +[](HeapTrimmer* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->mu_) {
          return t->pending_ || t->stopping_;
        },
        this));
    // Until the trim is due; a poke meanwhile moves it later.
    while (!stopping_ && absl::Now() < due_) {
      mu_.AwaitWithDeadline(absl::Condition(&stopping_), due_);
    }
    if (stopping_) return;
    pending_ = false;
    mu_.Unlock();
    ReleaseFreeHeapMemory();
    mu_.Lock();
    ++trims_;
  }
}

namespace {

// The first line of the file at `path` as a number of bytes; nullopt for "max", a value past
// 2^62 (v1's "unlimited" is a page short of 2^63), anything else, or no file.
std::optional<uint64_t> LimitIn(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  uint64_t bytes = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &bytes) ||
      bytes >= (uint64_t{1} << 62)) {
    return std::nullopt;
  }
  return bytes;
}

}  // namespace

std::optional<uint64_t> CgroupMemoryLimit(std::string_view proc_self_cgroup,
                                          const std::string& cgroup_root) {
  std::optional<uint64_t> lowest;
  // The group `path` under the hierarchy at `top`, and each parent up to `top`: a parent's
  // limit binds its children too.
  const auto consider = [&](const std::string& top, const std::string& path, const char* file) {
    std::string at = top + path;
    for (;;) {
      if (std::optional<uint64_t> limit = LimitIn(at + "/" + file); limit.has_value()) {
        lowest = std::min(lowest.value_or(*limit), *limit);
      }
      const size_t slash = at.rfind('/');
      if (at.size() <= top.size() || slash == std::string::npos || slash < top.size()) break;
      at.resize(slash);
    }
  };
  const absl::string_view text(proc_self_cgroup.data(), proc_self_cgroup.size());
  for (const absl::string_view line : absl::StrSplit(text, '\n')) {
    // "hierarchy-ID:controllers:path"; the path holds no ':' before it, but may after.
    const std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3 || absl::StrContains(fields[2], "..")) continue;
    const absl::string_view stripped = absl::StripSuffix(fields[2], "/");
    const std::string path(stripped.data(), stripped.size());
    if (fields[0] == "0" && fields[1].empty()) {
      consider(cgroup_root, path, "memory.max");  // v2's one hierarchy
    } else if (absl::c_linear_search(absl::StrSplit(fields[1], ','), "memory")) {
      consider(cgroup_root + "/memory", path, "memory.limit_in_bytes");
    }
  }
  return lowest;
}

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return uint64_t{1} << 30;
  const uint64_t physical = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  std::ifstream in("/proc/self/cgroup");
  std::stringstream groups;
  groups << in.rdbuf();
  const std::optional<uint64_t> limit = CgroupMemoryLimit(groups.str(), "/sys/fs/cgroup");
  return limit.has_value() && *limit > 0 ? std::min(physical, *limit) : physical;
}

uint64_t ResidentBytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int read = std::fscanf(statm, "%llu %llu", &size, &resident);
  std::fclose(statm);
  if (read != 2) return 0;
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t PeakResidentBytes() {
  // VmHWM, the high-water mark of this program's own memory. Not getrusage's ru_maxrss, which
  // counts the program the process ran before its exec too, and so a parent's pages that a
  // child started by fork held until then (a Python script's, say, or `sluice`'s own where it
  // runs sluice-remote in its place).
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return 0;
  char line[256];
  unsigned long long kib = 0;
  bool found = false;
  while (!found && std::fgets(line, sizeof line, status) != nullptr) {
    found = std::sscanf(line, "VmHWM: %llu kB", &kib) == 1;
  }
  std::fclose(status);
  return found ? static_cast<uint64_t>(kib) * 1024 : 0;
}

}  // namespace sluice
