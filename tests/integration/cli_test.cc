// The `sluice` command line against a real daemon, as a user runs it.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace sluice::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ProgramRun RunSluice(std::vector<std::string> args, absl::Duration timeout = absl::Seconds(120)) {
  args.insert(args.begin(), BinaryPath("sluice"));
  return RunProgram(args, timeout);
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(daemon_, DaemonProcess::Start({"--backend=cpu", "--cpu_memory=1G"}));
  }
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(CliTest, InfoPrintsBackendMemoryAndCatalog) {
  const ProgramRun run = RunSluice({"info", "--server=" + daemon_->address()});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("backend:   cpu"));
  EXPECT_THAT(run.out, HasSubstr("used of 1.0 GiB"));
  EXPECT_THAT(run.out, HasSubstr("each holds at most 16 requests or 64.0 MiB waiting to run and "
                                 "64.0 MiB of unread replies"));
  EXPECT_THAT(run.out, HasSubstr("bfs_expand v2"));
  EXPECT_THAT(run.out, HasSubstr("exclusive_scan_u32 v2"));
  EXPECT_THAT(run.out, HasSubstr("may alias: in=out"));
  EXPECT_THAT(run.out, HasSubstr("(loop guard: first repeated step only)"));
}

TEST_F(CliTest, BfsThroughTheDaemonMatchesTheHost) {
  const ProgramRun run = RunSluice({"bfs", "--server=" + daemon_->address(), "--nodes=20000",
                             "--degree=3", "--seed=5"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("via sluiced at " + daemon_->address()));
  EXPECT_THAT(run.out, HasSubstr("matches host BFS: yes"));
  EXPECT_THAT(run.out, HasSubstr("network round trips"));
}

// `sluice` loads none of the daemon's client (gRPC, protobuf, OpenSSL): what talks to a daemon,
// and `token`, run as sluice-remote beside it, with the same arguments and the same answers;
// without it, those say what they could not run and the rest works.
TEST_F(CliTest, DaemonWorkRunsAsSluiceRemoteAndInProcessWorkLoadsNoDaemonClient) {
  const ProgramRun lean = RunProgram({"/usr/bin/ldd", BinaryPath("sluice")}, absl::Seconds(30));
  ASSERT_EQ(lean.exit_code, 0) << lean.err;
  for (const char* library : {"libgrpc", "libprotobuf", "libssl", "libcrypto"}) {
    EXPECT_THAT(lean.out, Not(HasSubstr(library)));
  }
  const ProgramRun remote =
      RunProgram({"/usr/bin/ldd", BinaryPath("sluice-remote")}, absl::Seconds(30));
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_THAT(remote.out, HasSubstr("libgrpc"));

  const std::string problem = std::string(SLUICE_SOURCE_DIR) + "/examples/taint.ifds";
  const ProgramRun here = RunSluice({"solve", problem});
  ASSERT_EQ(here.exit_code, 0) << here.err;
  const ProgramRun there = RunSluice({"solve", problem, "--server=" + daemon_->address()});
  ASSERT_EQ(there.exit_code, 0) << there.err;
  EXPECT_EQ(there.out, here.out);
  const ProgramRun token = RunSluice({"token"});
  EXPECT_EQ(token.exit_code, 0) << token.err;
  EXPECT_THAT(token.out, HasSubstr("digest: sha256:"));

  const ScopedTempDir dir("sluice-alone");
  const std::string alone = dir.File("sluice");
  std::filesystem::copy_file(BinaryPath("sluice"), alone);
  ProgramRun run = RunProgram({alone, "solve", problem, "--server=" + daemon_->address()},
                              absl::Seconds(30));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("sluice solve: cannot run " + dir.File("sluice-remote")));
  run = RunProgram({alone, "info", "--server=" + daemon_->address()}, absl::Seconds(30));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("sluice info: cannot run"));
  run = RunProgram({alone, "solve", problem}, absl::Seconds(30));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, here.out);
}

TEST(CliServerTest, ASolveAgainstNoDaemonFailsAtOnceNamingTheCause) {
  // Nothing listens on port 1 of the loopback address: refused, said at once.
  const ProgramRun run = RunSluice({"solve", std::string(SLUICE_SOURCE_DIR) + "/examples/taint.ifds",
                                    "--server=127.0.0.1:1"},
                                   absl::Seconds(30));
  EXPECT_EQ(run.exit_code, 1) << run.err;
  EXPECT_THAT(run.err, HasSubstr("cannot reach sluiced at 127.0.0.1:1"));
  EXPECT_THAT(run.err, HasSubstr("Connection refused"));
}

TEST(CliHelpTest, HelpListsEveryFlagWithItsDefaultAndExitsZero) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"solve", "--help"}, {"gen", "-h"}}) {
    const ProgramRun run = RunSluice(args);
    EXPECT_EQ(run.exit_code, 0) << args[0];
    EXPECT_THAT(run.out, HasSubstr("sluice COMMAND [flags]"));
    EXPECT_THAT(run.out, HasSubstr("  --initial_capacity=0\n"));
    EXPECT_THAT(run.out, HasSubstr("  --procedures="));
    EXPECT_THAT(run.out, HasSubstr("  --server=\"\"\n"));
  }
  const ProgramRun daemon = RunProgram({BinaryPath("sluiced"), "--help"});
  EXPECT_EQ(daemon.exit_code, 0);
  EXPECT_THAT(daemon.out, HasSubstr("  --listen=127.0.0.1:7450\n"));
  EXPECT_THAT(daemon.out, HasSubstr("  --session_memory=0\n"));
  EXPECT_THAT(daemon.out, HasSubstr("  --max_transfer_bytes=0\n"));
  EXPECT_THAT(daemon.out, HasSubstr("  --max_sessions_per_client=0\n"));
}

// What the client cannot send or read ends a command with a message and exit 2 (bad input),
// not an abort (exit 134 before): a token with a line end or past ASCII, a CA path that is a
// directory, a backend it does not know; a health check's timeout may be infinite, and not
// negative.
TEST_F(CliTest, WhatTheClientCannotSendOrReadIsAMessageNotAnAbort) {
  const std::string server = "--server=" + daemon_->address();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"info", server, "--token=abc\r"},
        std::vector<std::string>{"bfs", server, "--nodes=100", "--token=s3cr\xc3\xa9t"}}) {
    const ProgramRun run = RunSluice(args);
    EXPECT_EQ(run.exit_code, 2) << args[0] << ": " << run.err;
    EXPECT_THAT(run.err, HasSubstr("the token holds byte 0x")) << args[0];
  }
  const testing::ScopedTempDir dir("sluice-cli-tls");
  const ProgramRun ca = RunSluice({"info", server, "--tls_ca=" + dir.path()});
  EXPECT_EQ(ca.exit_code, 2) << ca.err;
  EXPECT_THAT(ca.err, HasSubstr("it is a directory"));
  const ProgramRun forever = RunSluice({"health", server, "--timeout=inf"});
  EXPECT_EQ(forever.exit_code, 0) << forever.err;
  EXPECT_THAT(forever.out, HasSubstr("SERVING"));
  // A backend it does not know is a value it cannot take too.
  const std::string problem = dir.File("tiny.ifds");
  {
    std::ofstream out(problem);
    out << "ifds 1\nprocedure main start s exit e\nedge s e {id}\nseed s 0\n";
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"bfs", "--backend=bogus", "--nodes=10"},
        std::vector<std::string>{"solve", "--backend=bogus", problem}}) {
    const ProgramRun bogus = RunSluice(args);
    EXPECT_EQ(bogus.exit_code, 2) << args[0] << ": " << bogus.err;
    EXPECT_THAT(bogus.err, HasSubstr("bogus")) << args[0];
  }
  const ProgramRun negative = RunSluice({"health", server, "--timeout=-5s"});
  EXPECT_EQ(negative.exit_code, 2) << negative.err;
  EXPECT_THAT(negative.err, HasSubstr("--timeout is a duration past 0"));
}

TEST_F(CliTest, BadUsageExitsTwoAndUnreachableDaemonExitsOne) {
  EXPECT_EQ(RunSluice({}).exit_code, 2);
  EXPECT_EQ(RunSluice({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(RunSluice({"bfs", "--nodes=0"}).exit_code, 2);
  EXPECT_EQ(RunSluice({"info"}).exit_code, 2);
  // Flags absl would refuse with exit 1 are usage errors too, named on one line.
  const ProgramRun unknown = RunSluice({"gen", "--bogus"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown flag --bogus"));
  EXPECT_EQ(RunSluice({"gen", "--procedures=many"}).exit_code, 2);
  const ProgramRun daemon_flag = RunProgram({BinaryPath("sluiced"), "--drain-timeout=1s"});
  EXPECT_EQ(daemon_flag.exit_code, 2);
  EXPECT_THAT(daemon_flag.err, HasSubstr("unknown flag --drain-timeout"));
  ASSERT_OK(daemon_->process().SignalAndWait(SIGKILL, absl::Seconds(30)).status());
  const ProgramRun run = RunSluice({"info", "--server=" + daemon_->address()});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("UNAVAILABLE"));
}

}  // namespace
}  // namespace sluice::testing
