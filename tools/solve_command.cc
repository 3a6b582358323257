// sluice solve: solves an IFDS problem, on the resident solver (in-process or through a daemon)
// or on the reference solver, and prints the facts that hold at each node.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sluice/base/byte_size.h"
#include "sluice/base/heap.h"
#include "sluice/base/idle_work.h"
#include "sluice/base/mapped_buffer.h"
#include "sluice/ifds/binary_format.h"
#include "sluice/ifds/output.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"
#include "sluice/tools/cancel_on_signal.h"
#include "sluice/tools/cli.h"

ABSL_DECLARE_FLAG(std::string, out);
ABSL_FLAG(std::string, solver, "resident", "solve, analyze: resident or reference");
ABSL_FLAG(std::string, format, "",
          "solve: tsv (node<TAB>fact lines, the default) or json; analyze: text (the default), "
          "sarif or json");
ABSL_FLAG(bool, stats, false, "solve, analyze: print statistics on stderr");
ABSL_FLAG(bool, include_zero, false, "solve: also list the zero fact");
ABSL_FLAG(sluice::ByteSize, send_flows_from, sluice::ByteSize{uint64_t{64} << 20},
          "solve --server: send a problem file's flows to the daemon as they are read when the "
          "file has this many bytes or more (0: any file), rather than once it is compiled");
ABSL_FLAG(uint64_t, initial_capacity, 0,
          "solve: slots of every device table at the start (0: sized from the problem)");

namespace sluice {
namespace {

// The solution's size and digest, in the text and the (still open) JSON object, which it closes.
// Without --stats nothing prints them: the JSON object is closed, and no digest is made (a pass
// over every pair of the solution).
void AddSolutionStats(SolveOutcome* outcome) {
  if (!absl::GetFlag(FLAGS_stats)) {
    outcome->stats_json += "}";
    return;
  }
  const std::string digest = absl::StrFormat("%016x", ifds::SolutionDigest(outcome->solution));
  outcome->stats_text += absl::StrFormat("solution: %d node/fact pairs, digest %s\n",
                                         outcome->solution.facts.size(), digest);
  outcome->stats_json += absl::StrFormat(",\"solution_pairs\":%d,\"solution_digest\":\"%s\"}",
                                         outcome->solution.facts.size(), digest);
}

}  // namespace

std::string Rate(uint64_t bytes, double seconds) {
  return absl::StrFormat("%s at %.0f MB/s", HumanBytes(bytes),
                         seconds > 0 ? static_cast<double>(bytes) / seconds / 1e6 : 0.0);
}

absl::StatusOr<SolveOutcome> SolveWithFlags(const ifds::Problem& problem,
                                            const std::string& command, const ReadPhase& read,
                                            const SolveHooks& hooks) {
  const std::string solver = absl::GetFlag(FLAGS_solver);
  SolveOutcome outcome;
  // The read phase, when the problem was read from a file (a front end reports its own).
  const std::string sent_text =
      read.sent_bytes > 0 ? ", its flows sent as read: " + HumanBytes(read.sent_bytes) : "";
  const std::string read_text =
      read.seconds > 0 ? absl::StrFormat("read %.3f s (%s%s), ", read.seconds,
                                         Rate(read.bytes, read.seconds), sent_text)
                       : "";
  const absl::Time start = absl::Now();
  if (solver == "reference") {
    ifds::ReferenceStats stats;
    outcome.solution = ifds::SolveReference(problem, &stats);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    outcome.path_edges = stats.path_edges;
    outcome.seconds = seconds;
    outcome.stats_text = absl::StrFormat(
        "solver: reference\npath edges: %d\nseconds: %.3f\nphases: %ssolve %.3f s\n",
        stats.path_edges, seconds, read_text, seconds);
    outcome.stats_json = absl::StrFormat(
        "{\"solver\":\"reference\",\"path_edges\":%d,\"seconds\":%.6f,"
        "\"phase_seconds\":{\"read\":%.6f,\"solve\":%.6f},\"read_bytes\":%d,"
        "\"resident_bytes_before_read\":%d",
        stats.path_edges, seconds, read.seconds, seconds, read.bytes, read.resident_bytes_before);
    AddSolutionStats(&outcome);
    return outcome;
  }
  std::optional<OpenedDispatch> own;
  OpenedDispatch* opened = hooks.opened;
  if (opened == nullptr) {
    absl::StatusOr<OpenedDispatch> opening = OpenDispatch(command);
    if (!opening.ok()) return opening.status();
    own = *std::move(opening);
    opened = &*own;
  }
  ifds::ResidentOptions options;
  options.staged = hooks.staged;
  options.initial_capacity = absl::GetFlag(FLAGS_initial_capacity);
  options.part_compiled = hooks.part_compiled;
  options.flows_compiled = hooks.flows_compiled;
  options.compiled = hooks.compiled;
  options.uploaded = hooks.uploaded;
  // Long solves report progress on stderr: after two seconds, at most once a second.
  absl::Time last_report = start;
  options.progress = [&](const ifds::ResidentProgress& p) {
    const absl::Time now = absl::Now();
    if (now - start < absl::Seconds(2) || now - last_report < absl::Seconds(1)) return;
    last_report = now;
    std::fprintf(stderr, "%s: window %u, %u iterations, %llu path edges, %.1fs\n",
                 command.c_str(), p.windows, p.iterations,
                 static_cast<unsigned long long>(p.path_edges), absl::ToDoubleSeconds(now - start));
  };
  ifds::ResidentStats stats;
  absl::StatusOr<ifds::Solution> solved;
  {
    // Ctrl-C cancels the window running and ends the solve; the session closes as `opened`
    // goes, on the way out.
    const CancelOnSignal on_signal(opened->dispatch.get());
    solved = ifds::SolveResident(*opened->dispatch, problem, options, &stats);
    if (on_signal.interrupted()) {
      return absl::CancelledError(absl::StrFormat(
          "interrupted after %.1fs: the window running was cancelled and the session closed",
          absl::ToDoubleSeconds(absl::Now() - start)));
    }
  }
  if (!solved.ok()) return solved.status();
  outcome.solution = *std::move(solved);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  outcome.path_edges = stats.path_edges;
  outcome.seconds = seconds;
  outcome.peak_device_bytes = stats.peak_device_bytes;
  const std::string traffic = opened->traffic();
  outcome.stats_text = absl::StrFormat(
      "solver: resident on %s%s\npath edges: %d\nincoming calls: %d, end summaries: %d, "
      "summary edges: %d\niterations: %d in %d windows (%d table growths, %d after a full "
      "table)\n"
      "device memory: %s at peak\ntraffic: %s\nseconds: %.3f (set-up %.3f, windows %.3f, "
      "growth %.3f, results %.3f)\n"
      "phases: %scompile %.3f s, upload %.3f s (%s), fixed point %.3f s "
      "(windows %.3f, growth %.3f), results %.3f s (%s read back, %d window%s)\n",
      std::string(opened->dispatch->backend_id()),
      opened->remote ? " via sluiced at " + absl::GetFlag(FLAGS_server) : " in-process",
      stats.path_edges, stats.incoming, stats.end_summaries, stats.summaries, stats.iterations,
      stats.windows, stats.growths, stats.overflow_growths, HumanBytes(stats.peak_device_bytes),
      traffic, seconds, stats.setup_seconds, stats.window_seconds, stats.growth_seconds,
      stats.results_seconds, read_text, stats.compile_seconds,
      stats.setup_seconds - stats.compile_seconds,
      Rate(stats.upload_bytes, stats.setup_seconds - stats.compile_seconds),
      stats.window_seconds + stats.growth_seconds, stats.window_seconds, stats.growth_seconds,
      stats.results_seconds, HumanBytes(stats.download_bytes), stats.result_windows,
      stats.result_windows == 1 ? "" : "s");
  outcome.stats_json = absl::StrFormat(
      "{\"solver\":\"resident\",\"backend\":\"%s\",\"remote\":%s,\"path_edges\":%d,"
      "\"iterations\":%d,\"windows\":%d,\"growths\":%d,\"overflow_growths\":%d,"
      "\"peak_device_bytes\":%d,"
      "\"seconds\":%.6f,\"phase_seconds\":{\"read\":%.6f,\"setup\":%.6f,\"compile\":%.6f,"
      "\"upload\":%.6f,\"windows\":%.6f,\"growth\":%.6f,\"results\":%.6f},"
      "\"read_bytes\":%d,\"flows_sent_as_read_bytes\":%d,\"compiled_bytes\":%d,"
      "\"upload_bytes\":%d,\"download_bytes\":%d,\"result_windows\":%d,"
      "\"resident_bytes_before_read\":%d",
      std::string(opened->dispatch->backend_id()), opened->remote ? "true" : "false",
      stats.path_edges, stats.iterations, stats.windows, stats.growths, stats.overflow_growths,
      stats.peak_device_bytes, seconds, read.seconds, stats.setup_seconds, stats.compile_seconds,
      stats.setup_seconds - stats.compile_seconds, stats.window_seconds, stats.growth_seconds,
      stats.results_seconds, read.bytes, read.sent_bytes, stats.compiled_bytes,
      stats.upload_bytes, stats.download_bytes, stats.result_windows,
      read.resident_bytes_before);
  AddSolutionStats(&outcome);
  return outcome;
}

int ExitCodeOf(const absl::Status& status) {
  // Only a signal cancels what this command runs; INVALID_ARGUMENT is a value the command was
  // given that it cannot take (a backend, a token, a TLS file, a problem past a bound).
  switch (status.code()) {
    case absl::StatusCode::kCancelled:
      return kExitInterrupted;
    case absl::StatusCode::kInvalidArgument:
      return kExitUsage;
    default:
      return kExitFailed;
  }
}

int RunSolve(const std::string& path) {
  const uint64_t resident_before = ResidentBytes();
  const std::string solver = absl::GetFlag(FLAGS_solver);
  const std::string format =
      absl::GetFlag(FLAGS_format).empty() ? "tsv" : absl::GetFlag(FLAGS_format);
  if ((solver != "resident" && solver != "reference") || (format != "tsv" && format != "json")) {
    std::fprintf(stderr, "sluice solve: --solver is resident or reference, --format tsv or json\n");
    return kExitUsage;
  }
  if (absl::GetFlag(FLAGS_initial_capacity) > ifds::kMaxTableSlots) {
    std::fprintf(stderr, "sluice solve: --initial-capacity is at most %llu slots\n",
                 static_cast<unsigned long long>(ifds::kMaxTableSlots));
    return kExitUsage;
  }
  // A client of a daemon holds no device memory, so its peak is the parse: the text is read
  // twice there rather than held whole (LoadOptions::reread). In-process the device's memory
  // is this process's, its peak the solve, and the second reading would only cost time.
  const bool remote = !absl::GetFlag(FLAGS_server).empty();
  // Its arrays live for a phase each, and it would rather hold fewer bytes than take fewer
  // faults: small pages (internal::SetHugePages; 10 MiB less at the peak of a 5M-path-edge
  // problem, its phases about as fast: docs/benchmarks.md).
  if (remote) internal::SetHugePages(false);
  // Nor does it hold the flows of a large file, most of a problem a front end writes: its
  // session opens first, and they go to the daemon as the parser is done with them
  // (StagedFlowLists; the read's time counts their sending). That costs a few megabytes of
  // its own (the session's, memory shared with a daemon on the same host, the text read ahead
  // while a batch goes), which a small problem's flows do not repay (--send_flows_from): the
  // 27 MB text of a 1M-path-edge problem peaked at 56-59 MB that way, and at 54 MB read before
  // the session opened and sent once compiled (docs/benchmarks.md).
  std::error_code no_size;
  const uint64_t file_bytes = std::filesystem::file_size(path, no_size);
  std::optional<OpenedDispatch> opened;
  std::optional<ifds::StagedFlowLists> staged;
  ifds::LoadOptions load{.reread = remote};
  absl::Status staging = absl::OkStatus();
  if (remote && solver == "resident" && !no_size &&
      file_bytes >= absl::GetFlag(FLAGS_send_flows_from).bytes) {
    absl::StatusOr<OpenedDispatch> opening = OpenDispatch("sluice solve");
    if (!opening.ok()) {
      std::fprintf(stderr, "sluice solve: %s\n", opening.status().ToString().c_str());
      return ExitCodeOf(opening.status());
    }
    opened = *std::move(opening);
    staged.emplace(*opened->dispatch);
    load.flows_read = [&](ifds::FlowTable& flows, size_t first, size_t last) {
      staging = staged->Take(flows, first, last);
      return staging;
    };
  }
  const absl::Time reading = absl::Now();
  absl::StatusOr<ifds::Problem> loaded = ifds::LoadProblem(path, load);
  if (staged.has_value() && loaded.ok()) staging = staged->Flush(loaded->flows);
  if (!staging.ok()) {
    std::fprintf(stderr, "sluice solve: %s\n", staging.ToString().c_str());
    return ExitCodeOf(staging);
  }
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
    return kExitUsage;
  }
  // Shared with the ranking of the answer's order, which may outlive this function (IdleWork).
  const auto problem = std::make_shared<ifds::Problem>(*std::move(loaded));
  ReadPhase read{.seconds = absl::ToDoubleSeconds(absl::Now() - reading)};
  read.bytes = no_size ? 0 : file_bytes;  // a pipe's bytes are not known
  read.resident_bytes_before = resident_before;
  if (staged.has_value()) read.sent_bytes = staged->sent_bytes();
  // The parser's own tables are gone: what the heap kept of them goes back to the system.
  ReleaseFreeHeapMemory();
  // Once the problem is compiled only its names (for the answer), counts and seeds are needed:
  // each part of the rest goes back to the system as soon as the image holds it, so that the
  // problem and its compiled form are never both whole: the edges, call sites and procedures
  // in turn, the flows a range at a time, and what is left before the image is uploaded.
  SolveHooks hooks;
  hooks.part_compiled = [&](ifds::ProblemPart part) { ifds::FreePart(problem.get(), part); };
  hooks.flows_compiled = [&](size_t first, size_t last) { problem->flows.Release(first, last); };
  hooks.compiled = [&] {
    ifds::FreeCompiledParts(problem.get());
    ReleaseFreeHeapMemory();
  };
  // Ranking the node names for the answer is most of what writing it costs beside formatting.
  // Once the problem is uploaded they are ranked meanwhile, on whatever core the solve leaves
  // idle: all of them where the device is a daemon's or a GPU, the gaps between the CPU
  // device's passes where it is this process's. Once the solve is done the writer waits for
  // them about as long as ranking them itself would take (its cores are then idle but for
  // other programs'), and ranks them itself if they are not done by then: then both rankings'
  // memory is held (the other's as far as it got, about 20 bytes a node), which only other
  // programs keeping every core busy bring about.
  std::optional<IdleWork<ifds::OutputOrder>> ranking;
  hooks.uploaded = [&] {
    ranking.emplace([problem] { return ifds::RankOutput(*problem); });
  };
  hooks.opened = opened.has_value() ? &*opened : nullptr;
  hooks.staged = staged.has_value() ? &*staged : nullptr;
  absl::StatusOr<SolveOutcome> solved = SolveWithFlags(*problem, "sluice solve", read, hooks);
  if (!solved.ok()) {
    std::fprintf(stderr, "sluice solve: %s\n", solved.status().ToString().c_str());
    return ExitCodeOf(solved.status());
  }
  // The answer is written from what this process holds: the session closes first, and its
  // memory goes (the memory shared with a daemon on this host, the stream's buffers).
  staged.reset();
  opened.reset();
  const ifds::Solution& solution = solved->solution;
  const std::string stats_json = "\"stats\":" + solved->stats_json;
  const std::string& stats_text = solved->stats_text;
  const bool zero = absl::GetFlag(FLAGS_include_zero);
  const bool stats = absl::GetFlag(FLAGS_stats);
  const absl::Time writing = absl::Now();
  // Two cores rank a 5M-path-edge problem's 781K front-end names in about 40 ms.
  const absl::Duration rank_time =
      absl::Milliseconds(5) + absl::Nanoseconds(100) * problem->node_names.size();
  const std::optional<ifds::OutputOrder> order =
      ranking.has_value() ? ranking->Take(rank_time) : std::nullopt;
  const ifds::OutputOrder* const ranked = order.has_value() ? &*order : nullptr;
  // The answer goes out a block at a time as it is formatted: never held whole.
  uint64_t written = 0;
  const absl::Status streamed = StreamOutput(
      [&](ifds::OutputSink sink) {
        return format == "tsv" ? ifds::WriteTsv(*problem, solution, zero, sink, ranked)
                               : ifds::WriteJson(*problem, solution, zero,
                                                 stats ? stats_json : "", sink, ranked);
      },
      &written);
  if (!streamed.ok()) {
    std::fprintf(stderr, "sluice solve: %s\n", std::string(streamed.message()).c_str());
    return ExitCodeOf(streamed);
  }
  if (stats) {
    // The output's own time is known once it is written: on stderr only (the JSON stats are
    // part of that output).
    const double output_seconds = absl::ToDoubleSeconds(absl::Now() - writing);
    std::fprintf(stderr, "%soutput: %.3f s (%s)\nmemory: %s at peak, %s before the read\n",
                 stats_text.c_str(), output_seconds, Rate(written, output_seconds).c_str(),
                 HumanBytes(PeakResidentBytes()).c_str(), HumanBytes(resident_before).c_str());
  }
  return kExitOk;
}

}  // namespace sluice
