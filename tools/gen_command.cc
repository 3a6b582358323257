// sluice gen: seeded random IFDS problems, as text or binary.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "sluice/ifds/binary_format.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/text_format.h"
#include "sluice/tools/cli.h"
#include "sluice/tools/output_file.h"

ABSL_FLAG(std::string, out, "", "write to this file instead of stdout");
ABSL_FLAG(bool, binary, false, "gen: write the binary format (default: text)");
ABSL_FLAG(uint32_t, procedures, 8, "gen: procedures (main is the first)");
ABSL_FLAG(uint32_t, nodes_per_procedure, 12, "gen: average nodes per procedure body");
ABSL_FLAG(uint32_t, facts, 16, "gen: facts besides the zero fact");
ABSL_FLAG(double, call_density, 0.15, "gen: chance that a body node is a call site");
ABSL_FLAG(double, recursion, 0.2, "gen: chance that a callee may be any procedure (cycles)");
ABSL_FLAG(uint32_t, max_callees, 3, "gen: most callees per call site");
ABSL_FLAG(double, unreachable, 0.1, "gen: share of procedures no call reaches");
ABSL_FLAG(double, identity, 0.85, "gen: chance that a flow function is identity-based");
ABSL_FLAG(double, gen_rate, 0.08, "gen: per fact, chance a flow generates it");
ABSL_FLAG(double, kill_rate, 0.05, "gen: per fact, chance an identity flow kills it");
ABSL_FLAG(double, pair_rate, 0.03, "gen: explicit fact mappings per fact");
ABSL_FLAG(uint32_t, seeds, 1, "gen: facts seeded at main's start (the zero fact first)");
ABSL_FLAG(bool, front_end_shape, false,
          "gen: flows as a front end lists them, explicit pairs over each procedure's facts in "
          "scope (no id, kill or gen)");
ABSL_FLAG(uint32_t, scope, 8, "gen: with --front-end-shape, facts in scope per procedure");
ABSL_FLAG(bool, front_end_names, false,
          "gen: procedures and nodes named as a C front end names them (luaV_execute7, "
          "luaV_execute7:entry, luaV_execute7:1, ...); the same problem otherwise");

namespace sluice {

absl::Status WriteOutput(const std::string& bytes) {
  const std::string path = absl::GetFlag(FLAGS_out);
  if (path.empty()) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() ||
        std::fflush(stdout) != 0) {
      return absl::UnavailableError("cannot write to stdout");
    }
    return absl::OkStatus();
  }
  return WriteFile(path, bytes);
}

absl::Status StreamOutput(
    absl::FunctionRef<absl::Status(absl::FunctionRef<absl::Status(std::string_view)>)> write,
    uint64_t* bytes) {
  return WriteToFile(absl::GetFlag(FLAGS_out), write, bytes);
}

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  uint64_t written;
  return WriteToFile(
      path, [&](absl::FunctionRef<absl::Status(std::string_view)> sink) { return sink(bytes); },
      &written);
}

int RunGen() {
  ifds::GeneratorOptions o;
  o.seed = absl::GetFlag(FLAGS_seed);
  o.procedures = absl::GetFlag(FLAGS_procedures);
  o.nodes_per_procedure = absl::GetFlag(FLAGS_nodes_per_procedure);
  o.facts = absl::GetFlag(FLAGS_facts);
  o.call_density = absl::GetFlag(FLAGS_call_density);
  o.recursion = absl::GetFlag(FLAGS_recursion);
  o.max_callees = absl::GetFlag(FLAGS_max_callees);
  o.unreachable = absl::GetFlag(FLAGS_unreachable);
  o.identity = absl::GetFlag(FLAGS_identity);
  o.gen_rate = absl::GetFlag(FLAGS_gen_rate);
  o.kill_rate = absl::GetFlag(FLAGS_kill_rate);
  o.pair_rate = absl::GetFlag(FLAGS_pair_rate);
  o.seeds = absl::GetFlag(FLAGS_seeds);
  o.front_end_shape = absl::GetFlag(FLAGS_front_end_shape);
  o.scope = absl::GetFlag(FLAGS_scope);
  o.front_end_names = absl::GetFlag(FLAGS_front_end_names);
  absl::StatusOr<ifds::Problem> problem = ifds::Generate(o);
  if (!problem.ok()) {
    std::fprintf(stderr, "sluice gen: %s\n", std::string(problem.status().message()).c_str());
    return kExitUsage;
  }
  const std::string bytes = absl::GetFlag(FLAGS_binary) ? ifds::WriteBinary(*problem)
                                                        : ifds::WriteText(*problem);
  if (absl::Status s = WriteOutput(bytes); !s.ok()) {
    std::fprintf(stderr, "sluice gen: %s\n", std::string(s.message()).c_str());
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace sluice
