// What hostile clients can make a real sluiced hold: the daemon's RSS (and its peak) with no
// client, then with 500 streams that never open a session, then with 500 clients that each open
// a session, allocate a buffer and ask for reads they never take; then a well-behaved client's
// solve through the same daemon, checked against the reference solver; then the RSS once the
// hostile clients are gone. The daemon runs as its own process (build/bin/sluiced) with room
// for every hostile session, so that its memory bounds, not its session limits, are what holds:
//   --max_sessions=1024 --max_sessions_per_client=1024 --max_transfer_bytes=<--transfer>
// The bound it should stay under: the transfer budget, plus the device buffers the clients
// allocated (the CPU device's memory is the daemon's), plus a fixed cost per stream. Last, how
// soon a huge step stops once cancelled, and once the daemon drains.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/client/server_info.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/raw_session.h"

ABSL_FLAG(int, unopened, 500, "streams that never open a session");
ABSL_FLAG(int, readers, 500, "clients that open a session and never read a reply");
ABSL_FLAG(int, buffer_mib, 1, "MiB each never-reading client allocates and asks to read");
ABSL_FLAG(int, reads, 100, "reads of its whole buffer each never-reading client sends");
ABSL_FLAG(std::string, transfer, "1G", "the daemon's --max_transfer_bytes");

namespace sluice::bench {
namespace {

using testing::DaemonProcess;
using testing::RawSession;

struct Rss {
  double now_mib = 0;
  double peak_mib = 0;
};

Rss ReadRss(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  Rss rss;
  std::string key;
  double kib = 0;
  std::string unit;
  while (status >> key) {
    if (key == "VmRSS:" && status >> kib >> unit) rss.now_mib = kib / 1024;
    if (key == "VmHWM:" && status >> kib >> unit) rss.peak_mib = kib / 1024;
  }
  return rss;
}

absl::StatusOr<v1::GetInfoResponse> Info(const std::string& address) {
  return GetServerInfo(address, absl::Seconds(10));
}

// Waits (at most `bound`) for `done` on the daemon's GetInfo.
template <typename Done>
bool WaitForInfo(const std::string& address, absl::Duration bound, Done done) {
  const absl::Time until = absl::Now() + bound;
  while (absl::Now() < until) {
    absl::StatusOr<v1::GetInfoResponse> info = Info(address);
    if (info.ok() && done(*info)) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

void Print(const char* what, const Rss& rss, const v1::GetInfoResponse& info) {
  std::printf("%-46s RSS %8.1f MiB (peak %8.1f)  sessions %4u  unopened %3u  transfers %7.1f "
              "MiB  buffers %7.1f MiB\n",
              what, rss.now_mib, rss.peak_mib, info.active_sessions(), info.unopened_streams(),
              info.transfer_bytes_in_use() / 1048576.0,
              info.devices_size() > 0 ? info.devices(0).memory().used() / 1048576.0 : 0.0);
}

// Sends one step of 2^32 threads of atomic_add_u32 (minutes of work on the CPU device) on
// `session`, with id `id`.
bool SendHugeStep(RawSession& session, uint64_t handle, uint64_t id) {
  v1::SessionRequest execute;
  execute.set_id(id);
  v1::Step* step = execute.mutable_execute()->add_prefix();
  step->set_kernel("atomic_add_u32");
  step->add_params(0);
  step->add_params(1);
  step->add_handles(handle);
  step->mutable_grid()->set_x(65536);
  step->mutable_grid()->set_y(65535);
  step->mutable_grid()->set_z(1);
  return session.Send(execute);
}

// How soon one huge step stops once cancelled, and once the daemon is told to drain.
bool Stops() {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon =
      DaemonProcess::Start({"--backend=cpu", "--drain_timeout=2s"});
  if (!daemon.ok()) return false;
  RawSession session((*daemon)->address());
  absl::StatusOr<uint64_t> counter;
  if (!session.Open().ok() || !(counter = session.Allocate(4)).ok()) return false;
  // A cancel, a second into the step.
  const uint64_t id = session.NextId();
  if (!SendHugeStep(session, *counter, id)) return false;
  absl::SleepFor(absl::Seconds(1));
  v1::SessionRequest cancel;
  cancel.set_id(session.NextId());
  cancel.mutable_cancel()->set_target(id);
  const absl::Time cancelled = absl::Now();
  if (!session.Send(cancel)) return false;
  absl::StatusOr<v1::SessionResponse> reply = session.Await(id);
  const absl::Duration to_stop = absl::Now() - cancelled;
  std::printf("a huge step (2^32 threads) cancelled a second in: its reply (%s) came %s after "
              "the cancel\n",
              reply.ok() ? reply->status().message().c_str() : "none",
              absl::FormatDuration(to_stop).c_str());
  // A drain, a second into another.
  if (!SendHugeStep(session, *counter, session.NextId())) return false;
  absl::SleepFor(absl::Seconds(1));
  const absl::Time signalled = absl::Now();
  absl::StatusOr<int> status = (*daemon)->process().SignalAndWait(SIGTERM, absl::Seconds(120));
  const absl::Duration to_exit = absl::Now() - signalled;
  std::printf("a huge step running at SIGTERM with --drain_timeout=2s: the daemon exited %s "
              "after the signal, status %d\n",
              absl::FormatDuration(to_exit).c_str(), status.ok() ? *status : -1);
  return reply.ok() && status.ok() && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

int Main() {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start(
      {"--backend=cpu", "--max_sessions=1024", "--max_sessions_per_client=1024",
       "--max_transfer_bytes=" + absl::GetFlag(FLAGS_transfer), "--max_unopened_streams=64"});
  if (!daemon.ok()) {
    std::fprintf(stderr, "%s\n", daemon.status().ToString().c_str());
    return 1;
  }
  const std::string address = (*daemon)->address();
  const pid_t pid = (*daemon)->process().pid();
  absl::StatusOr<v1::GetInfoResponse> info = Info(address);
  if (!info.ok()) return 1;
  Print("started", ReadRss(pid), *info);

  // Streams that never open: the daemon admits --max_unopened_streams and refuses the rest.
  std::vector<std::unique_ptr<RawSession>> unopened;
  for (int i = 0; i < absl::GetFlag(FLAGS_unopened); ++i) {
    unopened.push_back(std::make_unique<RawSession>(address));
  }
  WaitForInfo(address, absl::Seconds(5),
              [](const v1::GetInfoResponse& i) { return i.unopened_streams() >= 64; });
  info = Info(address);
  if (!info.ok()) return 1;
  const std::string unopened_line =
      absl::StrCat(absl::GetFlag(FLAGS_unopened), " streams that never open");
  Print(unopened_line.c_str(), ReadRss(pid), *info);

  // Clients that ask for reads and never take the replies.
  const uint64_t bytes = static_cast<uint64_t>(absl::GetFlag(FLAGS_buffer_mib)) << 20;
  std::vector<std::unique_ptr<RawSession>> readers;
  int opened = 0, refused = 0;
  for (int i = 0; i < absl::GetFlag(FLAGS_readers); ++i) {
    auto session = std::make_unique<RawSession>(address);
    v1::SessionRequest open;
    open.mutable_open()->set_client_name(absl::StrCat("never-reads-", i));
    absl::StatusOr<uint64_t> handle;
    if (session->Call(open, 1).ok() && (handle = session->Allocate(bytes)).ok()) {
      ++opened;
      for (int r = 0; r < absl::GetFlag(FLAGS_reads); ++r) {
        v1::SessionRequest read;
        read.set_id(100 + r);
        v1::Range* range = read.mutable_read()->add_ranges();
        range->set_handle(*handle);
        range->set_length(bytes);
        if (!session->Send(read)) break;
      }
    } else {
      ++refused;
    }
    readers.push_back(std::move(session));
  }
  // Until the daemon holds all it will: its transfers stop growing.
  uint64_t last = ~uint64_t{0};
  WaitForInfo(address, absl::Seconds(30), [&last](const v1::GetInfoResponse& i) {
    const bool steady = i.transfer_bytes_in_use() == last;
    last = i.transfer_bytes_in_use();
    return steady && last > 0;
  });
  info = Info(address);
  if (!info.ok()) return 1;
  const Rss loaded = ReadRss(pid);
  const std::string readers_line =
      absl::StrCat("+ ", opened, " clients that never read (", refused, " refused)");
  Print(readers_line.c_str(), loaded, *info);

  // A well-behaved client meanwhile.
  ifds::GeneratorOptions options;
  options.seed = 5;
  options.procedures = 200;
  options.facts = 32;
  absl::StatusOr<ifds::Problem> problem = ifds::Generate(options);
  if (!problem.ok()) return 1;
  const ifds::Solution expected = ifds::SolveReference(*problem);
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> good =
      RemoteDispatch::Connect({.target = address, .client_name = "well-behaved"});
  bool correct = false;
  absl::Duration took;
  if (good.ok()) {
    const absl::Time start = absl::Now();
    absl::StatusOr<ifds::Solution> solved = ifds::SolveResident(**good, *problem);
    took = absl::Now() - start;
    correct = solved.ok() && *solved == expected;
    if (!solved.ok()) std::printf("the well-behaved solve failed: %s\n",
                                  solved.status().ToString().c_str());
  } else {
    std::printf("the well-behaved client could not connect: %s\n",
                good.status().ToString().c_str());
  }
  std::printf("well-behaved solve meanwhile (%zu facts): %s in %s\n", expected.facts.size(),
              correct ? "correct" : "WRONG or failed", absl::FormatDuration(took).c_str());
  good->reset();

  const double budget_mib =
      info->transfer_bytes_limit() / 1048576.0;
  const double buffers_mib =
      info->devices_size() > 0 ? info->devices(0).memory().used() / 1048576.0 : 0.0;
  std::printf("bound: transfer budget %.0f MiB + device buffers %.0f MiB + 1 MiB per stream "
              "(%d) = %.0f MiB; peak RSS %.0f MiB: %s\n",
              budget_mib, buffers_mib, opened + 64,
              budget_mib + buffers_mib + opened + 64, loaded.peak_mib,
              loaded.peak_mib <= budget_mib + buffers_mib + opened + 64 ? "within" : "OVER");

  unopened.clear();
  readers.clear();
  WaitForInfo(address, absl::Seconds(60), [](const v1::GetInfoResponse& i) {
    return i.active_sessions() == 0 && i.unopened_streams() == 0 &&
           i.transfer_bytes_in_use() == 0;
  });
  // The daemon gives freed memory back a moment after its last session closed.
  absl::SleepFor(absl::Seconds(5));
  info = Info(address);
  if (!info.ok()) return 1;
  Print("all gone", ReadRss(pid), *info);
  daemon->reset();
  return correct && Stops() ? 0 : 1;
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return sluice::bench::Main();
}
