// The resident IFDS solver through a real sluiced agrees with the reference solver, in few
// round trips, and `sluice solve` / `sluice gen` behave as documented.
#include <sys/wait.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/client/server_info.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/output.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"
#include "sluice/ifds/text_format.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;

class IfdsRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(daemon_, DaemonProcess::Start({"--backend=cpu", "--cpu_memory=2G"}));
  }
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(IfdsRemoteTest, ResidentThroughTheDaemonAgreesWithReference) {
  for (const bool pipelined : {false, true}) {
    SCOPED_TRACE(pipelined ? "pipelined" : "every call waiting");
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<RemoteDispatch> d,
        RemoteDispatch::Connect({.target = daemon_->address(), .pipelined = pipelined}));
    ASSERT_EQ(d->pipelined(), pipelined);
    for (uint64_t seed = 1; seed <= 24; ++seed) {
      ifds::GeneratorOptions o;
      o.seed = seed;
      o.procedures = 2 + seed % 10;
      o.facts = 4 + seed % 20;
      o.recursion = (seed % 3) * 0.3;
      o.max_callees = 1 + seed % 3;
      ASSERT_OK_AND_ASSIGN(ifds::Problem problem, ifds::Generate(o));
      ifds::ResidentOptions options;
      options.initial_capacity = seed % 2 == 0 ? 4 : 0;  // half of them grow through the daemon
      // A third of the pipelined solves read all but the results' first pair after the
      // listing: in one more request, however many pairs.
      if (pipelined && seed % 3 == 0) options.result_first_pairs = 1;
      ifds::ResidentStats stats;
      const uint64_t trips_before = d->counters().round_trips;
      ASSERT_OK_AND_ASSIGN(ifds::Solution got, ifds::SolveResident(*d, problem, options, &stats));
      const uint64_t trips = d->counters().round_trips - trips_before;
      EXPECT_EQ(got, ifds::SolveReference(problem)) << "seed " << seed;
      if (pipelined) {
        // Only the calls that read wait: the windows, the upload of the problem, the results'
        // compaction (again, should its list have been too short) and the sort.
        EXPECT_LE(trips, stats.windows + 5u) << "seed " << seed;
        EXPECT_GE(trips, stats.windows + 3u) << "seed " << seed;
        continue;
      }
      // Round trips: one per window; 53 to set up (52 buffers: graph, state, the calls bitmap,
      // 40 table segments, 4 chain heads, 5 lists; one upload), 6 for the results (4 buffers
      // allocated, the compaction, the sort with the read); per growth at most 5 tables of 8
      // segments moved (an allocation and a rehash each), 4 heads replaced and 5 lists moved (an
      // allocation and a copy each). Frees wait for no reply.
      EXPECT_LE(trips, stats.windows + 94u * stats.growths + 59u) << "seed " << seed;
      if (stats.growths == 0) {
        EXPECT_EQ(trips, stats.windows + 59u) << "seed " << seed;
      }
    }
  }
}

ProgramRun Sluice(std::vector<std::string> args) {
  args.insert(args.begin(), BinaryPath("sluice"));
  return RunProgram(args);
}

// The peak --stats gives is the solve's own, in-process and as a daemon's client (whose
// `sluice` runs sluice-remote in its place), not its parent's: a child started by fork or
// vfork (RunProgram's posix_spawn) counts the parent's pages in its getrusage peak
// (ru_maxrss), which an exec keeps. This process holds 256 MiB while they run.
TEST_F(IfdsRemoteTest, ThePeakMemoryTheStatsGiveIsTheSolvesOwnNotItsParents) {
  const std::string example = std::string(SLUICE_SOURCE_DIR) + "/examples/uninitialized.ifds";
  const std::vector<char> held(size_t{256} << 20, 1);
  for (const bool remote : {false, true}) {
    std::vector<std::string> args = {"solve", example, "--stats"};
    if (remote) args.push_back("--server=" + daemon_->address());
    const ProgramRun run = Sluice(args);
    const std::string& err = run.err;
    ASSERT_EQ(run.exit_code, 0) << err;
    std::smatch peak;
    // The process's line ("device memory: ..." is the solver's).
    ASSERT_TRUE(std::regex_search(err, peak, std::regex("\nmemory: ([0-9.]+) MiB at peak")))
        << err;
    EXPECT_GT(std::stod(peak[1]), 1.0) << err;
    EXPECT_LT(std::stod(peak[1]), 128.0) << (remote ? "client: " : "in-process: ") << err;
  }
  EXPECT_EQ(held[held.size() / 2], 1);
}

TEST_F(IfdsRemoteTest, SolveGivesTheSameAnswerEverywhereAndReportsStats) {
  const std::string example = std::string(SLUICE_SOURCE_DIR) + "/examples/uninitialized.ifds";
  const ProgramRun local = Sluice({"solve", example});
  const ProgramRun reference = Sluice({"solve", example, "--solver=reference"});
  const ProgramRun remote = Sluice({"solve", example, "--server=" + daemon_->address(), "--stats"});
  EXPECT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_THAT(local.out, HasSubstr("n1\tx\n"));
  EXPECT_EQ(local.out, reference.out);
  EXPECT_EQ(local.out, remote.out);
  EXPECT_THAT(remote.err, HasSubstr("path edges: "));
  EXPECT_THAT(remote.err, HasSubstr("network round trips"));
  EXPECT_THAT(remote.err, HasSubstr("seconds: "));

  const ProgramRun zero = Sluice({"solve", example, "--include-zero"});
  EXPECT_THAT(zero.out, HasSubstr("smain\tΛ\n"));
  const ProgramRun json = Sluice({"solve", example, "--format=json", "--stats"});
  EXPECT_THAT(json.out, HasSubstr("{\"node\":\"n1\",\"facts\":[\"g\",\"x\"]}"));
  EXPECT_THAT(json.out, HasSubstr("\"stats\":{\"solver\":\"resident\""));

  // Every phase is timed, with the bytes it moved: reading the file (its size), compiling,
  // uploading, the fixed point, the results read back, and writing the answer.
  const uint64_t file_bytes = std::filesystem::file_size(example);
  ASSERT_EQ(file_bytes, 1496u) << "the sizes below are this file's";
  EXPECT_THAT(remote.err,
              ::testing::ContainsRegex(
                  "phases: read [0-9.]+ s \\(1.5 KiB at [0-9]+ MB/s\\), compile [0-9.]+ s, upload "
                  "[0-9.]+ s \\([0-9.]+ [KM]?i?B at [0-9]+ MB/s\\), fixed point [0-9.]+ s "
                  "\\(windows [0-9.]+, growth [0-9.]+\\), results [0-9.]+ s \\([0-9.]+ [KM]?i?B "
                  "read back, 1 window\\)"))
      << remote.err;
  EXPECT_THAT(remote.err, ::testing::ContainsRegex("output: [0-9.]+ s \\([0-9.]+ [KM]?i?B at"));
  // And the process's memory: its peak, and what it held before it read the problem (its code
  // and libraries: a megabyte or more).
  EXPECT_THAT(remote.err, ::testing::ContainsRegex(
                              "memory: [0-9.]+ MiB at peak, [0-9.]+ MiB before the read"));
  EXPECT_THAT(json.out,
              ::testing::ContainsRegex("\"resident_bytes_before_read\":[1-9][0-9]{6,}"));
  for (const char* field :
       {"\"phase_seconds\":{\"read\":", "\"compile\":", "\"upload\":", "\"windows\":",
        "\"growth\":", "\"results\":"}) {
    EXPECT_THAT(json.out, HasSubstr(field));
  }
  EXPECT_THAT(json.out, HasSubstr(absl::StrFormat("\"read_bytes\":%d,", file_bytes)));
  EXPECT_THAT(json.out, ::testing::ContainsRegex(
                           "\"upload_bytes\":[1-9][0-9]*,\"download_bytes\":[1-9][0-9]*,"
                           "\"result_windows\":1,"));
  const ProgramRun by_reference = Sluice({"solve", example, "--solver=reference", "--stats"});
  EXPECT_THAT(by_reference.err, ::testing::ContainsRegex("phases: read [0-9.]+ s .*, solve"));
  EXPECT_THAT(by_reference.err, HasSubstr("before the read"));
}

// With --send-flows-from at or below a file's size, its flows go to the daemon as they are
// read, a megabyte at a time (the stats say how many bytes): the answer is the one a solve
// that sends them with the compiled problem gives, for a text read in several stretches and a
// binary file (whose flows go once it is read). A smaller file's go with the compiled problem.
TEST_F(IfdsRemoteTest, FlowsSentAsTheFileIsReadGiveTheSameAnswer) {
  const ScopedTempDir dir("sluice-send");
  const std::string text = dir.File("fe.ifds"), binary = dir.File("fe.bin");
  const std::vector<std::string> gen = {"gen", "--front-end-shape", "--facts=32",
                                        "--procedures=3000", "--seed=5"};
  std::vector<std::string> args = gen;
  args.push_back("--out=" + text);
  ASSERT_EQ(Sluice(args).exit_code, 0);
  args.back() = "--out=" + binary;
  args.push_back("--binary");
  ASSERT_EQ(Sluice(args).exit_code, 0);
  ASSERT_GT(std::filesystem::file_size(text), uint64_t{6} << 20);  // stretches of 2 MiB
  const ProgramRun local = Sluice({"solve", text});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  for (const std::string& file : {text, binary}) {
    for (const std::string from : {"0", "64M"}) {
      SCOPED_TRACE(file + ", --send-flows-from=" + from);
      const ProgramRun remote =
          Sluice({"solve", file, "--server=" + daemon_->address(), "--send-flows-from=" + from,
                  "--stats", "--format=json", "--out=" + dir.File("answer.json")});
      ASSERT_EQ(remote.exit_code, 0) << remote.err;
      EXPECT_EQ(remote.err.find("its flows sent as read") != std::string::npos, from == "0")
          << remote.err;
      std::ifstream answer(dir.File("answer.json"));
      const std::string json((std::istreambuf_iterator<char>(answer)), {});
      const auto bytes = [&](const std::string& field) -> uint64_t {
        std::smatch m;
        if (!std::regex_search(json, m, std::regex("\"" + field + "\":([0-9]+)"))) {
          ADD_FAILURE() << "no " << field << " in " << json.substr(json.size() - 600);
          return 0;
        }
        return std::stoull(m[1]);
      };
      const uint64_t sent = bytes("flows_sent_as_read_bytes");
      // The flows are most of the compiled problem: sent as read, more than a batch of them;
      // what is uploaded once it is compiled is the rest.
      EXPECT_EQ(sent > (uint64_t{1} << 20), from == "0") << sent;
      EXPECT_EQ(bytes("compiled_bytes"), bytes("upload_bytes") + sent);
      const ProgramRun tsv = Sluice({"solve", file, "--server=" + daemon_->address(),
                                     "--send-flows-from=" + from});
      EXPECT_EQ(tsv.out, local.out);
    }
  }
}

TEST_F(IfdsRemoteTest, ASolveBeyondTheSessionQuotaFailsWithItsCodeAndTheDaemonCarriesOn) {
  // A session may hold 2 MiB of buffers; this solve needs about 20 at its peak.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DaemonProcess> small,
                       DaemonProcess::Start({"--backend=cpu", "--session_memory=2M"}));
  const testing::ScopedTempDir dir("sluice-quota");
  const std::string problem = dir.File("quota.ifds");
  ASSERT_EQ(Sluice({"gen", "--procedures=400", "--facts=40", "--out=" + problem}).exit_code, 0);
  const ProgramRun refused = Sluice({"solve", problem, "--server=" + small->address()});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(refused.err, HasSubstr("session memory quota"));
  EXPECT_EQ(refused.out, "") << "no partial answer";
  // The daemon serves the next solve, which fits.
  const std::string example = std::string(SLUICE_SOURCE_DIR) + "/examples/uninitialized.ifds";
  const ProgramRun next = Sluice({"solve", example, "--server=" + small->address()});
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(next.out, Sluice({"solve", example, "--solver=reference"}).out);
}

TEST_F(IfdsRemoteTest, GenIsSeededAndSolveRejectsBadInputWithExitTwo) {
  const ProgramRun a = Sluice({"gen", "--seed=7", "--procedures=5"});
  const ProgramRun b = Sluice({"gen", "--seed=7", "--procedures=5"});
  const ProgramRun c = Sluice({"gen", "--seed=8", "--procedures=5"});
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  ASSERT_OK(ifds::ParseText(a.out, "gen").status());

  const testing::ScopedTempDir scratch("sluice-solve");
  const std::string& dir = scratch.path();
  const std::string bad = dir + "/bad.ifds";
  FILE* f = std::fopen(bad.c_str(), "w");
  std::fputs("facts a\nprocedure m start s exit e\nedge s e {id, kill b}\n", f);
  std::fclose(f);
  const ProgramRun run = Sluice({"solve", bad});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr(bad + ":3:20: unknown fact 'b'"));
  EXPECT_EQ(Sluice({"solve", dir + "/missing.ifds"}).exit_code, 2);
  EXPECT_EQ(Sluice({"solve"}).exit_code, 2);
  EXPECT_EQ(Sluice({"solve", bad, "--format=xml"}).exit_code, 2);

  const std::string binary = dir + "/p.bin";
  ASSERT_EQ(Sluice({"gen", "--seed=7", "--procedures=5", "--binary", "--out=" + binary}).exit_code, 0);
  const ProgramRun from_binary = Sluice({"solve", binary, "--solver=reference"});
  const std::string text = dir + "/p.ifds";
  ASSERT_EQ(Sluice({"gen", "--seed=7", "--procedures=5", "--out=" + text}).exit_code, 0);
  EXPECT_EQ(from_binary.out, Sluice({"solve", text}).out);

  // The answer is streamed as it is formatted: an output that cannot be written fails the
  // command (exit 1) and says where, in either format; the same answer, streamed to a file,
  // is what stdout gets.
  for (const char* format : {"--format=tsv", "--format=json"}) {
    const ProgramRun full = Sluice({"solve", text, format, "--out=/dev/full"});
    EXPECT_EQ(full.exit_code, 1) << format;
    EXPECT_THAT(full.err, HasSubstr("cannot write /dev/full")) << format;
    const ProgramRun nowhere = Sluice({"solve", text, format, "--out=" + dir + "/no/such/dir"});
    EXPECT_EQ(nowhere.exit_code, 1) << format;
    EXPECT_THAT(nowhere.err, HasSubstr("cannot write " + dir + "/no/such/dir")) << format;
    const std::string answer = dir + "/answer.out";
    ASSERT_EQ(Sluice({"solve", text, format, "--out=" + answer}).exit_code, 0);
    std::ifstream written(answer, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(written)), {});
    EXPECT_EQ(bytes, Sluice({"solve", text, format}).out) << format;
  }
}

// A file named by --out is written over in place, not truncated first (WriteToFile,
// tools/output_file.h): whatever it held before, it ends holding the new output and nothing
// else, from `solve` in either format and from `gen`; a write that fails says why.
TEST_F(IfdsRemoteTest, AnOutputWrittenOverAnOlderFileLeavesNothingOfIt) {
  const ScopedTempDir dir("sluice-over");
  const std::string problem = dir.path() + "/p.ifds";
  ASSERT_EQ(Sluice({"gen", "--seed=3", "--procedures=6", "--out=" + problem}).exit_code, 0);
  const auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  const auto put = [](const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  };
  const std::string out = dir.path() + "/out";
  for (const char* format : {"--format=tsv", "--format=json"}) {
    const std::string answer = Sluice({"solve", problem, format}).out;
    ASSERT_GT(answer.size(), 16u) << format;
    // Longer than the answer (its tail must go), shorter, and of the same length.
    for (const std::string& before : {std::string(3 * answer.size() + 4097, 'x'),
                                      answer.substr(0, answer.size() / 2),
                                      std::string(answer.size(), '\n')}) {
      put(out, before);
      ASSERT_EQ(Sluice({"solve", problem, format, "--out=" + out}).exit_code, 0) << format;
      EXPECT_EQ(read(out), answer) << format << ", over " << before.size() << " bytes";
    }
  }
  // gen writes its problem whole (WriteFile), the same way.
  put(out, std::string(2 * read(problem).size(), '#'));
  ASSERT_EQ(Sluice({"gen", "--seed=3", "--procedures=6", "--out=" + out}).exit_code, 0);
  EXPECT_EQ(read(out), read(problem));
  const ProgramRun full = Sluice({"gen", "--seed=3", "--out=/dev/full"});
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_THAT(full.err, HasSubstr("cannot write /dev/full: No space left on device"));
}

TEST_F(IfdsRemoteTest, AbsurdSizesAndNonProblemFilesAreUsageErrorsNotCrashes) {
  // The zero fact alone is a problem the generator can make (it used to divide by zero).
  const ProgramRun zero_facts = Sluice({"gen", "--facts=0", "--procedures=3"});
  EXPECT_EQ(zero_facts.exit_code, 0) << zero_facts.err;
  ASSERT_OK(ifds::ParseText(zero_facts.out, "gen").status());
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"gen", "--facts=4294967295"}, "at most 65534 facts"},
      {{"gen", "--facts=65535"}, "at most 65534 facts"},
      {{"gen", "--max-callees=4000000000", "--call-density=1"}, "max_callees must be 1 to"},
      {{"gen", "--procedures=1000000000"}, "can exceed the generator's"},
      {{"gen", "--facts=60000", "--gen-rate=1", "--procedures=1000"}, "flow-function entries"},
      {{"gen", "--pair-rate=2"}, "pair_rate must be 0 to 1"},
      {{"gen", "--identity=nan"}, "identity must be 0 to 1"},
      {{"bfs", "--nodes=4000000000", "--degree=4000000000"}, "can exceed the generator's"},
      // Products that wrap 64 bits to something small.
      {{"gen", "--procedures=2147506728", "--nodes-per-procedure=4294921136", "--facts=0",
        "--call-density=0"},
       "can exceed the generator's"},
      {{"bfs", "--nodes=2147512027", "--degree=4294910539"}, "can exceed the generator's"},
      {{"solve", ::testing::TempDir()}, "is a directory"},
      {{"solve", "/dev/zero"}, "neither format"},
      {{"solve", "--initial-capacity=9223372036854775809", "/dev/null"},
       "--initial-capacity is at most"},
  };
  for (const auto& [args, message] : refused) {
    const ProgramRun run = Sluice(args);
    EXPECT_EQ(run.exit_code, 2) << absl::StrJoin(args, " ") << ": " << run.err;
    EXPECT_THAT(run.err, HasSubstr(message)) << absl::StrJoin(args, " ");
  }
}

TEST_F(IfdsRemoteTest, CtrlCCancelsTheWindowRunningAndClosesTheSessionAtOnce) {
  ScopedTempDir dir("ctrl-c");
  const std::string problem = dir.File("large.bin");
  // Seconds of windows on this machine: the solve is still running when the signal comes.
  const ProgramRun generated =
      Sluice({"gen", "--seed=36", "--procedures=3000", "--nodes-per-procedure=60",
              "--facts=32", "--binary", "--out=" + problem});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  for (const bool remote : {true, false}) {
    SCOPED_TRACE(remote ? "--server" : "in-process");
    std::vector<std::string> argv = {BinaryPath("sluice"), "solve", problem, "--out=/dev/null"};
    if (remote) argv.push_back("--server=" + daemon_->address());
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChildProcess> solve, ChildProcess::Spawn(argv));
    // Its first progress line says its windows run (after two seconds of solving).
    ASSERT_TRUE(WaitUntil(absl::Seconds(120), [&] {
      return solve->Stderr().find(": window ") != std::string::npos;
    })) << solve->Stderr();
    if (remote) {
      ASSERT_OK_AND_ASSIGN(v1::GetInfoResponse info,
                           GetServerInfo(daemon_->address(), absl::Seconds(10)));
      EXPECT_EQ(info.active_sessions(), 1u);
    }
    const absl::Time signalled = absl::Now();
    ASSERT_OK_AND_ASSIGN(int status, solve->SignalAndWait(SIGINT, absl::Seconds(30)));
    const absl::Duration took = absl::Now() - signalled;
    ASSERT_TRUE(WIFEXITED(status)) << solve->Stderr();
    EXPECT_EQ(WEXITSTATUS(status), 130) << solve->Stderr();
    EXPECT_THAT(solve->Stderr(), HasSubstr("interrupted after"));
    // A window is cancelled at its next iteration, not run to its end.
    EXPECT_LT(took, absl::Seconds(10));
    if (remote) {
      // The session closed with the command, not at a timeout.
      EXPECT_TRUE(WaitUntil(absl::Seconds(10), [&] {
        absl::StatusOr<v1::GetInfoResponse> info =
            GetServerInfo(daemon_->address(), absl::Seconds(10));
        return info.ok() && info->active_sessions() == 0;
      }));
    }
  }
}

}  // namespace
}  // namespace sluice::testing
