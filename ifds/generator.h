// Seeded random IFDS problems with the structure real analyses have: procedures whose bodies
// are chains with branches and loops, call sites with one or several callees, recursion,
// unreachable procedures, and identity-heavy flow functions with gens and kills. The same
// options and seed always give the same problem.
#ifndef SLUICE_IFDS_GENERATOR_H_
#define SLUICE_IFDS_GENERATOR_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "sluice/ifds/problem.h"

namespace sluice::ifds {

struct GeneratorOptions {
  uint64_t seed = 1;
  uint32_t procedures = 8;
  uint32_t nodes_per_procedure = 12;  // average body length
  uint32_t facts = 16;                // not counting the zero fact
  double call_density = 0.15;         // chance that a body node is a call site
  double recursion = 0.2;             // chance that a callee may be any procedure (cycles)
  uint32_t max_callees = 3;           // callees per call site: 1 .. max_callees
  double unreachable = 0.1;           // share of procedures no call ever reaches
  double identity = 0.85;             // chance that a flow function passes facts through
  double gen_rate = 0.08;             // per fact, chance a flow generates it from zero
  double kill_rate = 0.05;            // per fact, chance an identity flow kills it
  double pair_rate = 0.03;            // per fact pair, chance of an explicit mapping
  double branch = 0.25;               // chance of an extra forward edge (a branch) per node
  double loop = 0.05;                 // chance of a back edge (a loop) per node
  uint32_t seeds = 1;                 // facts seeded at main's start (the zero fact first)
  // Flows as a front end lists them: every mapping an explicit pair (no id, kill or gen), over
  // the facts in scope of a procedure (`scope` facts each, drawn at random): an edge's flow
  // maps each fact in scope to itself unless killed (kill_rate), to another fact in scope
  // (pair_rate) and generates one from the zero fact (gen_rate, per fact in scope); a call
  // passes the facts its callee shares with it and, per fact, an argument (pair_rate) to a
  // fact of the callee's scope; a return maps the shared facts back and the callee's facts to
  // the caller's result (pair_rate); a call-to-return edge passes the caller's facts around.
  // Such problems carry many more flow pairs per path edge than the compact form.
  bool front_end_shape = false;
  uint32_t scope = 8;
  // Names as a C front end writes them (`sluice analyze`'s own scheme): procedures named like
  // C functions (`luaV_execute7`, say: a module prefix, a word, the procedure's number), and
  // their nodes `NAME:entry`, `NAME:1` ... `NAME:exit` (a body of one node: `NAME:entry`),
  // most past 12 bytes. Otherwise `main`, `p1` ... and `p1.start`, `p1.1` ... `p1.exit`. The
  // problem is the same either way but for its names: no random draw depends on them.
  bool front_end_names = false;
};

// The largest problems the generator makes: a bound that fits in memory, checked up front.
inline constexpr uint64_t kMaxGeneratedNodes = uint64_t{1} << 24;
inline constexpr uint64_t kMaxGeneratedFlowFacts = uint64_t{1} << 28;  // facts listed in flows
inline constexpr uint32_t kMaxCallees = 0xffff;  // per call site, as Validate allows

// InvalidArgument for options out of range (no procedures, facts beyond the limit, ...).
absl::StatusOr<Problem> Generate(const GeneratorOptions& options);

}  // namespace sluice::ifds

#endif  // SLUICE_IFDS_GENERATOR_H_
