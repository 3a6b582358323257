// The docs say what the build is. Every kernel, flag, command, metric and file that README.md
// and docs/*.md name exists in this build (the kernels a running sluiced lists, the flags and
// commands of `sluiced --help` and `sluice --help`, the metrics its /metrics exports, the files
// of the tree), and every flag of sluiced and sluice is documented somewhere. A name the docs
// get wrong fails here, saying which page names it.
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/base/log.h"
#include "sluice/base/token.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/engine/cuda_device.h"
#include "sluice/engine/resource_table.h"
#include "sluice/engine/session_manager.h"
#include "sluice/engine/session.h"
#include "sluice/engine/transfer_budget.h"
#include "sluice/proto/contract.h"
#include "sluice/server/grpc/resumable_sessions.h"
#include "sluice/server/grpc/session_reactor.h"
#include "sluice/server/shared_memory.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/http_get.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace sluice::testing {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = SLUICE_SOURCE_DIR;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// README.md and every page of docs/, by their path in the tree.
std::map<std::string, std::string> Pages() {
  std::map<std::string, std::string> pages = {{"README.md", ReadFile(kRoot / "README.md")}};
  for (const fs::directory_entry& e : fs::directory_iterator(kRoot / "docs")) {
    if (e.path().extension() == ".md") {
      pages[absl::StrCat("docs/", e.path().filename().string())] = ReadFile(e.path());
    }
  }
  return pages;
}

// A page's code: its inline code spans and the lines of its fenced blocks.
std::vector<std::string> CodeOf(const std::string& page) {
  std::vector<std::string> code;
  bool fenced = false;
  static const std::regex kSpan("`([^`]+)`");
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "```")) {
      fenced = !fenced;
      continue;
    }
    const std::string text(line);
    if (fenced) {
      code.push_back(text);
      continue;
    }
    for (std::sregex_iterator it(text.begin(), text.end(), kSpan), end; it != end; ++it) {
      code.push_back((*it)[1]);
    }
  }
  return code;
}

std::set<std::string> Matches(const std::string& text, const std::regex& re, int group = 1) {
  std::set<std::string> found;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
    found.insert((*it)[group]);
  }
  return found;
}

// Flags compare with dashes spelled as underscores: both programs take either spelling.
std::string Normalized(std::string flag) {
  std::replace(flag.begin(), flag.end(), '-', '_');
  return flag;
}

// The flags a program's --help lists ("  --name=default").
std::set<std::string> HelpFlags(const std::string& program) {
  const ProgramRun help = RunProgram({BinaryPath(program), "--help"});
  EXPECT_EQ(help.exit_code, 0) << program << " --help: " << help.err;
  return Matches(help.out + help.err, std::regex("\n  --([a-z0-9_]+)="));
}

// Flags the tree's programs declare (the benchmarks', with ABSL_FLAG), the flags its scripts
// take (spelled in their sources), and those of the tools the docs show beside Sluice's.
std::set<std::string> OtherFlags() {
  std::set<std::string> flags;
  for (const char* folder : {"bench", "server", "tools"}) {
    for (const fs::directory_entry& e : fs::directory_iterator(kRoot / folder)) {
      if (e.path().extension() != ".cc") continue;
      for (const std::string& f :
           Matches(ReadFile(e.path()), std::regex("ABSL_FLAG\\([^,]+,\\s*([a-z0-9_]+)"))) {
        flags.insert(f);
      }
    }
  }
  for (const char* script : {"scripts/test.sh", "scripts/demo.sh", "scripts/fuzz.sh",
                             "scripts/gpu-bundle.sh", "bench/run.sh", "tests/gpu/run.sh",
                             "tests/gpu/dry-run.sh", "deploy/check.sh", "deploy/image-test.sh"}) {
    for (const std::string& f : Matches(ReadFile(kRoot / script), std::regex("(--[a-z][a-z0-9-]*)"))) {
      flags.insert(Normalized(f.substr(2)));
    }
  }
  // cmake and ctest, docker and podman, Google Benchmark, cargo (the Rust crate's), and --help
  // of every program.
  for (const char* f : {"build", "install", "prefix", "preset", "target", "config", "test_dir",
                        "output_on_failure", "build_arg", "gpus", "rm", "name", "device",
                        "stop_timeout", "benchmark_min_time", "benchmark_filter", "release",
                        "example", "offline", "help"}) {
    flags.insert(f);
  }
  return flags;
}

// Each match of `re` in `text`: its groups, the whole match first.
std::vector<std::vector<std::string>> Statements(const std::string& text, const std::regex& re) {
  std::vector<std::vector<std::string>> statements;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
    std::vector<std::string>& groups = statements.emplace_back();
    for (const std::ssub_match& group : *it) groups.push_back(group.str());
  }
  return statements;
}

class DocsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pages_ = new std::map<std::string, std::string>(Pages()); }
  static void TearDownTestSuite() { delete pages_; }

  // Every (page, name) where `name` is a match of `re` in the page's code (or, with
  // `prose`, anywhere in it).
  static std::vector<std::pair<std::string, std::string>> Named(const std::regex& re,
                                                                bool prose = false) {
    std::vector<std::pair<std::string, std::string>> named;
    for (const auto& [path, page] : *pages_) {
      const std::vector<std::string> texts =
          prose ? std::vector<std::string>{page} : CodeOf(page);
      for (const std::string& text : texts) {
        for (const std::string& name : Matches(text, re)) named.emplace_back(path, name);
      }
    }
    return named;
  }
  // Every (page, groups) where a match of `re`, anywhere in the page, has those groups.
  static std::vector<std::pair<std::string, std::vector<std::string>>> Stated(
      const std::regex& re) {
    std::vector<std::pair<std::string, std::vector<std::string>>> stated;
    for (const auto& [path, page] : *pages_) {
      for (std::vector<std::string>& groups : Statements(page, re)) {
        stated.emplace_back(path, std::move(groups));
      }
    }
    return stated;
  }

  static std::map<std::string, std::string>* pages_;
};

std::map<std::string, std::string>* DocsTest::pages_ = nullptr;

TEST_F(DocsTest, ThePagesAreRead) {
  EXPECT_GE(pages_->size(), 10u);
  EXPECT_THAT(Named(std::regex("(--[a-z][a-z0-9_-]*)"), true), ::testing::SizeIs(::testing::Gt(100)));
}

TEST_F(DocsTest, EveryFlagTheDocsNameIsTakenByAProgramOrScriptOfTheTree) {
  std::set<std::string> known = HelpFlags("sluiced");
  ASSERT_GT(known.size(), 30u);
  for (const std::set<std::string>& more : {HelpFlags("sluice"), OtherFlags()}) {
    known.insert(more.begin(), more.end());
  }
  for (const auto& [page, flag] : Named(std::regex("(?:^|[^a-z0-9-])--([a-z][a-z0-9_-]*)"), true)) {
    EXPECT_TRUE(known.contains(Normalized(flag)))
        << page << " names --" << flag << ", which no program or script of the tree takes";
  }
}

TEST_F(DocsTest, EveryFlagOfSluicedAndSluiceIsDocumented) {
  std::set<std::string> documented;
  for (const auto& [page, flag] : Named(std::regex("--([a-z][a-z0-9_-]*)"), true)) {
    documented.insert(Normalized(flag));
  }
  for (const char* program : {"sluiced", "sluice"}) {
    for (const std::string& flag : HelpFlags(program)) {
      EXPECT_TRUE(documented.contains(flag))
          << program << " --" << flag << " is documented nowhere in README.md or docs/";
    }
  }
}

TEST_F(DocsTest, EverySluiceCommandTheDocsRunExists) {
  const ProgramRun help = RunProgram({BinaryPath("sluice"), "--help"});
  const std::string commands_text = help.out.substr(0, help.out.find("\n\n", help.out.find("Commands:")));
  const std::set<std::string> commands = Matches(commands_text, std::regex("\n  ([a-z]+) "));
  ASSERT_THAT(commands, ::testing::IsSupersetOf({"solve", "analyze", "info", "gen"}));
  for (const auto& [page, command] : Named(std::regex("(?:^|[\\s/$(])sluice ([a-z][a-z-]*)"))) {
    EXPECT_TRUE(commands.contains(command))
        << page << " runs `sluice " << command << "`, which is not a command of sluice";
  }
}

TEST_F(DocsTest, EveryKernelTheDocsNameIsInTheCatalogADaemonServes) {
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon = DaemonProcess::Start({});
  ASSERT_OK(daemon.status());
  const ProgramRun info =
      RunProgram({BinaryPath("sluice"), "info", "--server=" + (*daemon)->address()});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const std::set<std::string> catalog = Matches(info.out, std::regex("\n  ([a-z0-9_]+) v[0-9]+:"));
  ASSERT_THAT(catalog, ::testing::IsSupersetOf({"fill_u32", "sort_u64", "repeat_while_u32"}));
  // Kernel names: an IFDS or BFS family prefix, or an element-type suffix. Build targets of the
  // tree (a fuzzer, a test) may look the same: they are not kernels.
  const std::set<std::string> targets = Matches(
      ReadFile(kRoot / "tests/CMakeLists.txt") + ReadFile(kRoot / "fuzz/CMakeLists.txt") +
          ReadFile(kRoot / "bench/CMakeLists.txt"),
      std::regex("\\(([a-z0-9_]+)"));
  for (const auto& [page, kernel] :
       Named(std::regex("\\b((?:ifds|bfs)_[a-z0-9_]+|[a-z0-9_]+_(?:u32|u64))\\b(?![.\\w])"))) {
    EXPECT_TRUE(catalog.contains(kernel) || targets.contains(kernel))
        << page << " names `" << kernel << "`, which is no kernel of the catalog sluiced serves";
  }
}

TEST_F(DocsTest, EveryMetricTheDocsNameIsExportedAtSluicedsMetrics) {
  // A daemon with a tenant (its token from `sluice token`), after one solve of that tenant:
  // every family then has its series.
  const ProgramRun token = RunProgram({BinaryPath("sluice"), "token"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(token.out, m, std::regex("token: +(\\S+)\n.*digest: +(\\S+)")))
      << token.out;
  const testing::ScopedTempDir dir("sluice-docs-test");
  const std::string tenants = dir.File("tenants.toml");
  std::ofstream(tenants) << "[tenants.docs]\ntokens = [\"" << m[2] << "\"]\n";
  absl::StatusOr<std::unique_ptr<DaemonProcess>> daemon =
      DaemonProcess::Start({"--metrics_listen=127.0.0.1:0", "--tenants_file=" + tenants});
  ASSERT_OK(daemon.status());
  const ProgramRun solve =
      RunProgram({BinaryPath("sluice"), "solve", (kRoot / "examples/taint.ifds").string(),
                  "--server=" + (*daemon)->address(), "--token=" + m[1].str()});
  ASSERT_EQ(solve.exit_code, 0) << solve.err;
  const std::string metrics = (*daemon)->metrics_address();
  ASSERT_FALSE(metrics.empty()) << (*daemon)->process().Stderr();
  absl::StatusOr<std::string> exposition = HttpGet(metrics, "/metrics");
  ASSERT_OK(exposition.status());
  std::set<std::string> known = Matches(*exposition, std::regex("# TYPE (sluice_[a-z0-9_]+)"));
  ASSERT_GT(known.size(), 20u);
  for (const std::string& metric : std::set<std::string>(known)) {
    for (const char* suffix : {"_bucket", "_sum", "_count"}) known.insert(metric + suffix);
  }
  // Names of the same shape that are no metrics: the programs (build/bin) and targets of the
  // tree, its source files, and the C ABI's names.
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(BinaryPath("sluiced")).parent_path())) {
    known.insert(e.path().filename().string());
  }
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(kRoot)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && absl::StartsWith(name, "build")) continue;
    if (name == "CMakeLists.txt" || e.path().extension() == ".cmake") {
      for (const std::string& t : Matches(ReadFile(e.path()), std::regex("\\b(sluice_[a-z0-9_]+)"))) {
        known.insert(t);
      }
    } else if (absl::StartsWith(name, "sluice_")) {
      known.insert(e.path().stem().string());
    }
  }
  // And the C ABI's functions and types, as its header declares them.
  for (const std::string& name : Matches(ReadFile(kRoot / "client/c/sluice.h"),
                                         std::regex("\\b(sluice_[a-z0-9_]+)\\b"))) {
    known.insert(name);
  }
  for (const auto& [page, metric] : Named(std::regex("\\b(sluice_[a-z0-9_]+)\\b"), true)) {
    EXPECT_TRUE(known.contains(metric))
        << page << " names `" << metric << "`, which sluiced does not export (nor is it a "
        << "program, target or file of the tree)";
  }
}

TEST_F(DocsTest, EveryLogRateTheDocsStateIsTheOneTheLogKeeps) {
  // "a burst of 20 lines, then 2 a second": base/log.h's kLogBurst and kLogPerSecond.
  const std::regex rate("burst\\s+of\\s+([0-9]+)(\\s+lines)?,?\\s+(and\\s+)?then\\s+([0-9]+)");
  const auto stated = Stated(rate);
  for (const auto& [path, said] : stated) {
    EXPECT_EQ(said[1], std::to_string(kLogBurst)) << path << ": " << said[0];
    EXPECT_EQ(said[4], std::to_string(kLogPerSecond)) << path << ": " << said[0];
  }
  EXPECT_GE(stated.size(), 3u) << "daemon.md and operations.md state the rate";
}

TEST_F(DocsTest, TheLeastABufferCountsIsTheOneTheQuotasCount) {
  // "a buffer counts at least 512 bytes": ResourceTable::kMinCountedBytes.
  const std::regex least("buffer\\s+counts\\s+at\\s+least\\s+([0-9]+)\\s+bytes");
  auto stated = Stated(least);
  for (std::vector<std::string>& said :
       Statements(ReadFile(kRoot / "proto/sluice/v1/sluice.proto"), least)) {
    stated.emplace_back("sluice.proto", std::move(said));
  }
  for (const auto& [path, said] : stated) {
    EXPECT_EQ(said[1], std::to_string(ResourceTable::kMinCountedBytes)) << path << ": " << said[0];
  }
  EXPECT_GE(stated.size(), 2u) << "daemon.md and sluice.proto state it";
}

TEST_F(DocsTest, TheBoundsOnAKernelCallAndOnAnAttachAreTheCodes) {
  const std::string proto = ReadFile(kRoot / "proto/sluice/v1/sluice.proto");
  // "no step with more handles or params than any kernel takes (64 and 8)".
  const std::regex step(
      "than[\\s/]+any[\\s/]+kernel[\\s/]+takes[\\s/]+\\(([0-9]+)[\\s/]+and[\\s/]+([0-9]+)\\)");
  const auto steps = Statements(proto, step);
  ASSERT_EQ(steps.size(), 1u) << "sluice.proto states them for ExecuteRequest";
  EXPECT_EQ(steps[0][1], std::to_string(kMaxBindings));
  EXPECT_EQ(steps[0][2], std::to_string(kMaxParams));
  // docs/daemon.md: a kernel thread "checks each loop whose length its data sets every 64
  // steps, asks whether its request has stopped every 64 checks".
  const std::regex polls(
      "sets\\s+every\\s+([0-9]+)\\s+steps,\\s+asks\\s+whether\\s+its\\s+request\\s+"
      "has\\s+stopped\\s+every\\s+([0-9]+)\\s+checks");
  const auto stated = Stated(polls);
  ASSERT_EQ(stated.size(), 1u) << "daemon.md states them";
  EXPECT_EQ(stated[0].second[1], std::to_string(kStopPollSteps));
  EXPECT_EQ(stated[0].second[2], std::to_string(kStopPollLooks));
  // "within a second of connecting" (across a comment's lines).
  const std::regex attach("within[\\s/]+a[\\s/]+second[\\s/]+of[\\s/]+connecting");
  EXPECT_EQ(Statements(proto, attach).size(), 1u);
  EXPECT_EQ(SharedRegions::kAttachSeconds, 1);
  // OpenRequest.client_name: "at most 128 bytes are kept".
  const auto kept =
      Statements(proto, std::regex("at\\s+most\\s+([0-9]+)\\s+bytes\\s+are\\s+kept"));
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0][1], std::to_string(kMaxClientNameBytes));
  // The C ABI: a program's params "(at most 8: ...", a step's resources "(at most 64: ...".
  const std::string header = ReadFile(kRoot / "client/c/sluice.h");
  const auto at_most = [&](const char* what) {
    const auto found = Statements(
        header, std::regex(std::string(what) + "[^(]*\\(at[\\s*]+most[\\s*]+([0-9]+):"));
    return found.size() == 1 ? found[0][1] : std::string("not stated once");
  };
  EXPECT_EQ(at_most("scalar parameters"), std::to_string(kMaxParams));
  EXPECT_EQ(at_most("its resources in binding order"), std::to_string(kMaxBindings));
  // docs/tenants.md: "A token is printable ASCII with no blank ... of at most 4096 bytes".
  const auto tokens = Statements(
      ReadFile(kRoot / "docs/tenants.md"),
      std::regex("token\\s+is\\s+printable\\s+ASCII[^.]*?at\\s+most\\s+([0-9]+)\\s+bytes"));
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0][1], std::to_string(kMaxTokenBytes));
  // docs/daemon.md: --cpu_threads "(at most 1024 threads)".
  const auto threads = Statements(ReadFile(kRoot / "docs/daemon.md"),
                                  std::regex("--cpu_threads[^\\n]*at most ([0-9]+) threads"));
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads[0][1], std::to_string(CpuDevice::kMaxThreads));
}

TEST_F(DocsTest, TheRecordOfRepliesIsBoundedAsTheDocsSay) {
  // "each request it remembers beyond 256 at once counts 160 bytes ..., and it remembers the
  // last 65536 at most".
  const std::regex bound("remembers\\s+beyond\\s+([0-9]+)\\s+at\\s+once\\s+counts\\s+"
                         "([0-9]+)\\s+bytes[^.]*?the\\s+last\\s+([0-9]+)\\s+at\\s+most");
  const auto stated = Stated(bound);
  for (const auto& [path, said] : stated) {
    EXPECT_EQ(said[1], std::to_string(ReplyRecord::kFreeEntries)) << path;
    EXPECT_EQ(said[2], std::to_string(ReplyRecord::kEntryBytes)) << path;
    EXPECT_EQ(said[3], std::to_string(ReplyRecord::kMaxEntries)) << path;
  }
  EXPECT_GE(stated.size(), 1u) << "daemon.md states it";
}

TEST_F(DocsTest, TheSameHostPathsFiguresAreTheClients) {
  // docs/interface.md: "uploads and reads of 1 MiB or more move through that memory", "an
  // upload copied in goes in 32 MiB pieces", "a read comes back in 2 MiB pieces through two
  // slots", "the client touches 4 MiB of that memory" (RemoteDispatch's constants). The
  // measurements' log (docs/benchmarks.md) keeps what earlier sessions had.
  const auto mib = [](uint64_t bytes) { return std::to_string(bytes >> 20); };
  const std::vector<std::pair<std::regex, std::vector<std::string>>> figures = {
      {std::regex("reads\\s+of\\s+([0-9]+)\\s+MiB\\s+or\\s+more\\s+move"),
       {mib(RemoteDispatch::kSharedMinBytes)}},
      {std::regex("upload\\s+copied\\s+in\\s+goes\\s+in\\s+([0-9]+)\\s+MiB\\s+pieces"),
       {mib(RemoteDispatch::kSharedPieceBytes)}},
      {std::regex("read\\s+comes\\s+back\\s+in\\s+([0-9]+)\\s+MiB\\s+pieces\\s+through\\s+"
                  "(\\w+)\\s+slots"),
       {mib(RemoteDispatch::kSharedReadPieceBytes),
        RemoteDispatch::kSharedReadSlots == 2 ? "two" : "?"}},
      {std::regex("touches\\s+([0-9]+)\\s+MiB\\s+of\\s+that\\s+memory"),
       {mib(RemoteDispatch::kSharedReadPieceBytes * RemoteDispatch::kSharedReadSlots)}},
  };
  for (const auto& [re, want] : figures) {
    size_t seen = 0;
    for (const auto& [path, said] : Stated(re)) {
      if (path == "docs/benchmarks.md") continue;
      ++seen;
      for (size_t k = 0; k < want.size(); ++k) {
        EXPECT_EQ(said[k + 1], want[k]) << path << ": " << said[0];
      }
    }
    EXPECT_GE(seen, 1u) << "docs/interface.md states each";
  }
}

TEST_F(DocsTest, WhatTheDaemonMayHoldIsStatedAsItCountsIt) {
  // docs/daemon.md: "194 KiB for each stream that may wait to open, 130 KiB for each session
  // past its client's share", "a 32 MiB ring per session" (StreamBounds, the CUDA device's
  // staging ring), and the same figures where deploy/check/check.mjs sums what a container's
  // daemon may hold against its memory limit.
  const std::string stream_kib = std::to_string(StreamBounds::kUnopenedStreamBytes >> 10);
  const std::string session_kib = std::to_string(StreamBounds::kPastShareBytes >> 10);
  const std::string ring_mib = std::to_string(kCudaStagingRingBytes >> 20);
  const std::vector<std::pair<std::regex, std::string>> figures = {
      {std::regex("([0-9]+)\\s+KiB\\s+for\\s+each\\s+stream\\s+that\\s+may\\s+wait\\s+to\\s+open"),
       stream_kib},
      {std::regex("([0-9]+)\\s+KiB\\s+for\\s+each\\s+session\\s+past\\s+its\\s+client's\\s+share"),
       session_kib},
      {std::regex("a\\s+([0-9]+)\\s+MiB\\s+ring\\s+per\\s+session"), ring_mib},
  };
  for (const auto& [re, want] : figures) {
    const auto stated = Stated(re);
    EXPECT_GE(stated.size(), 1u) << "docs/daemon.md states it";
    for (const auto& [path, said] : stated) EXPECT_EQ(said[1], want) << path << ": " << said[0];
  }
  const std::string check = ReadFile(kRoot / "deploy" / "check" / "check.mjs");
  EXPECT_THAT(check, ::testing::HasSubstr("unopened * " + stream_kib + " * Ki"));
  EXPECT_THAT(check, ::testing::HasSubstr("sessions * " + session_kib + " * Ki"));
  EXPECT_THAT(check, ::testing::HasSubstr("sessions * " + ring_mib + " * Mi"));
  EXPECT_EQ(TransferBudget::kChargeSlackDivisor, 8u) << "check.mjs counts an eighth more";
  EXPECT_EQ(SessionManager::kWarmUploadDivisor, 8u) << "and an eighth of upload blocks";
}

TEST_F(DocsTest, WhatRepliesAndPlansHoldIsStatedAsItIsCounted) {
  // docs/daemon.md and docs/architecture.md: "512 bytes for each reply's framing", "two
  // windows of 8 MiB", and the flags table's "in 4 KiB chunks ...: up to 18 MiB".
  const std::vector<std::pair<std::regex, uint64_t>> figures = {
      {std::regex("([0-9]+)\\s+bytes\\s+for\\s+each\\s+reply's\\s+framing"),
       kReplyOverheadBytes},
      {std::regex("two\\s+windows\\s+of\\s+([0-9]+)\\s+MiB"), kReadWindowBytes >> 20},
      {std::regex("in\\s+4\\s+KiB\\s+chunks[^|]*up\\s+to\\s+([0-9]+)\\s+MiB"),
       ReadHoldBytes(~uint64_t{0}, kMinChunkSize) >> 20},
  };
  EXPECT_EQ(kMinChunkSize, 4096u);
  // "an execute's plan of its steps while it runs (about 1.3 KiB a step": a step of one pass.
  const std::vector<uint64_t> one(1, 0);
  const StepRef fill{.kernel = "fill_u32", .params = one, .handles = one};
  const auto plan =
      Stated(std::regex("plan\\s+of\\s+its\\s+steps[^(]*\\(about\\s+([0-9.]+)\\s+KiB"));
  EXPECT_GE(plan.size(), 1u);
  for (const auto& [path, said] : plan) {
    const uint64_t bytes = Session::ExecutePlanBytes({}, {&fill, 1}).value();
    EXPECT_EQ(said[1], absl::StrFormat("%.1f", bytes / 1024.0)) << path << ": " << said[0];
  }
  for (const auto& [re, want] : figures) {
    const auto stated = Stated(re);
    EXPECT_GE(stated.size(), 1u) << "the docs state it";
    for (const auto& [path, said] : stated) {
      EXPECT_EQ(said[1], std::to_string(want)) << path << ": " << said[0];
    }
  }
}

TEST_F(DocsTest, EveryFileTheDocsNameIsInTheTree) {
  std::set<std::string> folders;
  for (const fs::directory_entry& e : fs::directory_iterator(kRoot)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && !absl::StartsWith(name, "build") && name[0] != '.') {
      folders.insert(name);
    }
  }
  ASSERT_THAT(folders, ::testing::IsSupersetOf({"client", "docs", "scripts", "tests"}));
  // What runs write (bench/results/, ...): .gitignore names those folders, and the docs say
  // where the output goes without it being in the tree, or being checked against a local run's.
  const std::set<std::string> products =
      Matches(ReadFile(kRoot / ".gitignore"), std::regex("\n/([a-z][a-z0-9_/-]*/)(?=\n)"));
  ASSERT_TRUE(products.contains("bench/results/"));
  int checked = 0;
  for (const auto& [page, path] :
       Named(std::regex("(?:^|[\\s(`])([A-Za-z0-9_.-]+/[A-Za-z0-9_./{},*<>-]*)"))) {
    if (!folders.contains(path.substr(0, path.find('/')))) continue;
    const std::string& named = path;  // a lambda may not capture a structured binding
    if (std::any_of(products.begin(), products.end(),
                    [&](const std::string& p) { return absl::StartsWith(named, p); })) {
      continue;
    }
    // A placeholder ends what can be checked: "tests/testing/...", "include/sluice/<folder>/".
    std::string pattern = path.substr(0, std::min(path.find('<'), path.find("...")));
    pattern = std::string(absl::StripSuffix(pattern, "."));
    glob_t found{};
    const int rc = glob((kRoot / pattern).c_str(), GLOB_BRACE | GLOB_NOSORT, nullptr, &found);
    // With braces, glob gives one match per alternative that exists; each must.
    size_t alternatives = 1;
    if (const size_t open = pattern.find('{'); open != std::string::npos) {
      alternatives = std::count(pattern.begin() + open, pattern.begin() + pattern.find('}', open), ',') + 1;
    }
    EXPECT_TRUE(rc == 0 && (pattern.find('*') != std::string::npos || found.gl_pathc == alternatives))
        << page << " names `" << path << "`, which is not in the tree";
    globfree(&found);
    ++checked;
  }
  EXPECT_GT(checked, 80);
}

}  // namespace
}  // namespace sluice::testing
