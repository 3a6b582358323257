// Witnesses: the chain explaining a fact starts where it is generated, follows flows the
// problem has, and leaves a callee only for the call that entered it.
#include "sluice/ifds/witness.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/text_format.h"
#include "tests/testing/status_matchers.h"

namespace sluice::ifds {
namespace {

using Kind = WitnessStep::Kind;

// main: a is generated at m1, copied to b, passed to pass() as x at c1 (and back as r); a second
// call c2 passes a as x: its r came through c2, though c1's way into pass() is shorter.
constexpr char kProgram[] =
    "facts a b x r\n"
    "procedure main start ms exit me\n"
    "nodes main m1 m2 c1 r1 c2 r2 u\n"
    "procedure pass start ps exit pe\n"
    "nodes pass p1\n"
    "edge ms m1 {id}\n"
    "edge m1 m2 {id, gen a}\n"
    "edge m2 c1 {id, a -> b}\n"
    "call c1 returns r1 {id, kill r}\n"
    "callee c1 pass call {b -> x} return {x -> r}\n"
    "edge r1 c2 {id, kill r}\n"
    "call c2 returns r2 {id}\n"
    "callee c2 pass call {a -> x} return {x -> r}\n"
    "edge r2 u {id}\n"
    "edge ps p1 {id}\n"
    "edge p1 pe {id}\n"
    "edge u me {id}\n"
    "seed ms 0\n";

std::string Show(const Problem& p, const std::vector<WitnessStep>& steps) {
  std::string out;
  for (const WitnessStep& s : steps) {
    const char* kind = s.kind == Kind::kOrigin ? "origin"
                       : s.kind == Kind::kEdge ? "edge"
                       : s.kind == Kind::kCall ? "call"
                                               : "return";
    absl::StrAppend(&out, kind, " ", std::string(p.node_names[s.node]), "/", p.fact_names[s.fact],
                    "; ");
  }
  return out;
}

uint32_t NodeId(const Problem& p, const std::string& name) {
  for (uint32_t n = 0; n < p.node_count(); ++n) {
    if (p.node_names[n] == name) return n;
  }
  ADD_FAILURE() << "no node " << name;
  return 0;
}

TEST(WitnessTest, AChainRunsFromTheGenThroughTheCallThatEnteredTheCallee) {
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(kProgram, "w.ifds"));
  const Solution s = SolveReference(p);
  const Witnesses witnesses(p, s);
  // r at r1: a generated on m1 -> m2, copied to b, passed as x, returned as r.
  EXPECT_EQ(Show(p, witnesses.Explain(NodeId(p, "r1"), 4, 1000)),
            "origin m1/0; edge m2/a; edge c1/b; call ps/x; edge p1/x; edge pe/x; return r1/r; ");
  // r at r2 returned from the call at c2, so it entered there.
  EXPECT_EQ(Show(p, witnesses.Explain(NodeId(p, "r2"), 4, 1000)),
            "origin m1/0; edge m2/a; edge c1/a; edge r1/a; edge c2/a; call ps/x; edge p1/x; "
            "edge pe/x; return r2/r; ");
  // a at u: the shortest chain, around both calls.
  EXPECT_EQ(Show(p, witnesses.Explain(NodeId(p, "u"), 1, 1000)),
            "origin m1/0; edge m2/a; edge c1/a; edge r1/a; edge c2/a; edge r2/a; edge u/a; ");
  // In the callee alone, the chain starts above it, at any caller.
  EXPECT_EQ(Show(p, witnesses.Explain(NodeId(p, "p1"), 3, 1000)),
            "origin m1/0; edge m2/a; edge c1/b; call ps/x; edge p1/x; ");
  // Nothing to explain: the zero fact, a pair not in the solution, a budget too small.
  EXPECT_TRUE(witnesses.Explain(NodeId(p, "u"), 0, 1000).empty());
  EXPECT_TRUE(witnesses.Explain(NodeId(p, "m1"), 1, 1000).empty());
  EXPECT_TRUE(witnesses.Explain(NodeId(p, "r1"), 4, 3).empty());
  // The tabulation's chains: r at r2 also came back through c2's call, not c1's.
  EXPECT_EQ(Show(p, witnesses.FromTabulation(NodeId(p, "r2"), 4)),
            "origin m1/0; edge m2/a; edge c1/a; edge r1/a; edge c2/a; call ps/x; edge p1/x; "
            "edge pe/x; return r2/r; ");
  EXPECT_EQ(Show(p, witnesses.FromTabulation(NodeId(p, "r1"), 4)),
            "origin m1/0; edge m2/a; edge c1/b; call ps/x; edge p1/x; edge pe/x; return r1/r; ");
  EXPECT_TRUE(witnesses.FromTabulation(NodeId(p, "m1"), 1).empty());
  EXPECT_TRUE(witnesses.FromTabulation(NodeId(p, "u"), 0).empty());
  // A chain returning to a call other than the one that entered the callee is not realizable.
  const WitnessStep origin{Kind::kOrigin, 0, 0, 0};
  EXPECT_TRUE(Witnesses::Realizable({origin, {Kind::kCall, 1, 1, 0}, {Kind::kReturn, 2, 1, 0}}));
  EXPECT_FALSE(Witnesses::Realizable({origin, {Kind::kCall, 1, 1, 0}, {Kind::kReturn, 2, 1, 1}}));
  EXPECT_TRUE(Witnesses::Realizable({origin, {Kind::kReturn, 2, 1, 1}})) << "began in the callee";
}

// A search that meets a remembered chain's pair at its own level takes that chain's way from
// the origin; inside a callee it entered from its exit, where the chain may have entered the
// callee by another call, it does not.
TEST(WitnessTest, ASearchEndsWhereItMeetsARememberedChainOnlyOutsideCalleesItEntered) {
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(kProgram, "w.ifds"));
  const Solution s = SolveReference(p);
  Witnesses witnesses(p, s);
  // A way to a at r1 that is not the shortest (m1, m2, then a at c1 and r1), remembered.
  const std::vector<WitnessStep> around = {
      {Kind::kOrigin, NodeId(p, "m1"), 0, 0}, {Kind::kEdge, NodeId(p, "m2"), 1, 0},
      {Kind::kEdge, NodeId(p, "c1"), 1, 0}, {Kind::kEdge, NodeId(p, "r1"), 1, 0}};
  witnesses.Remember(around);
  // a at u: back to r1's a (three pairs met), then the remembered way, where a search of its
  // own needs more; a pair of the chain is its own prefix.
  EXPECT_TRUE(Witnesses(p, s).Explain(NodeId(p, "u"), 1, 3).empty());
  EXPECT_EQ(Show(p, witnesses.Explain(NodeId(p, "u"), 1, 3)),
            "origin m1/0; edge m2/a; edge c1/a; edge r1/a; edge c2/a; edge r2/a; edge u/a; ");
  EXPECT_EQ(Show(p, witnesses.Explain(NodeId(p, "c1"), 1, 1)),
            "origin m1/0; edge m2/a; edge c1/a; ");
  // r1's r, the way through c1's call, remembered: x at p1 and pe is on it, entered from c1.
  witnesses.Remember(witnesses.Explain(NodeId(p, "r1"), 4, 1000));
  // r at r2 comes back from c2's call; the search meets pe/x inside the callee it entered
  // from r2, where the remembered way entered from c1: it must not end there.
  const std::vector<WitnessStep> r2 = witnesses.Explain(NodeId(p, "r2"), 4, 1000);
  EXPECT_TRUE(Witnesses::Realizable(r2));
  EXPECT_EQ(Show(p, r2),
            "origin m1/0; edge m2/a; edge c1/a; edge r1/a; edge c2/a; call ps/x; edge p1/x; "
            "edge pe/x; return r2/r; ");
  // At the callee's own level (no call to return to), it may: x at pe, from c1's way.
  EXPECT_EQ(Show(p, witnesses.Explain(NodeId(p, "pe"), 3, 1)),
            "origin m1/0; edge m2/a; edge c1/b; call ps/x; edge p1/x; edge pe/x; ");
}

// Search looks shallow first: a value made in the pair's own procedure or above is found
// without going into callees, within a budget a deep search alone would not have.
TEST(WitnessTest, SearchFindsAShallowChainWithinOneBudgetForAllDepths) {
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(kProgram, "w.ifds"));
  const Solution s = SolveReference(p);
  const Witnesses witnesses(p, s);
  uint64_t visited = 0;
  EXPECT_EQ(Show(p, witnesses.Search(NodeId(p, "r2"), 4, 1000, &visited)),
            "origin m1/0; edge m2/a; edge c1/a; edge r1/a; edge c2/a; call ps/x; edge p1/x; "
            "edge pe/x; return r2/r; ");
  EXPECT_GT(visited, 0u);
  // Depth 0 cannot go back into pass() from r2, depth 1 can: the pairs of both are counted.
  uint64_t shallow = 0, deep = 0;
  EXPECT_TRUE(witnesses.Explain(NodeId(p, "r2"), 4, 1000, 0, &shallow).empty());
  EXPECT_FALSE(witnesses.Explain(NodeId(p, "r2"), 4, 1000, 1, &deep).empty());
  EXPECT_EQ(visited, shallow + deep);
  // One budget for all depths: what depth 0 met is not met again for free.
  EXPECT_TRUE(witnesses.Search(NodeId(p, "r2"), 4, shallow + deep - 1).empty());
}

// A value made 20 calls down (f0 calls f1 ... calls f19, which makes it) and returned up to
// main: only a search deeper than the first search of a finding goes (8 calls) finds it, as
// in C++, whose library calls nest that deep. The chain goes down and comes back by the calls
// that entered each callee.
TEST(WitnessTest, SearchFindsAChainMadeTwentyCallsDown) {
  constexpr int kLevels = 20;
  std::string text = "facts v\nprocedure main start ms exit me\nnodes main c r\n"
                     "edge ms c {id}\ncall c returns r {id}\ncallee c f0 call {id} return {id}\n"
                     "edge r me {id}\nseed ms 0\n";
  for (int i = 0; i < kLevels; ++i) {
    absl::StrAppend(&text, "procedure f", i, " start s", i, " exit e", i, "\n");
    if (i + 1 < kLevels) {
      absl::StrAppend(&text, "nodes f", i, " c", i, " r", i, "\nedge s", i, " c", i, " {id}\n",
                      "call c", i, " returns r", i, " {id}\ncallee c", i, " f", i + 1,
                      " call {id} return {id}\nedge r", i, " e", i, " {id}\n");
    } else {
      absl::StrAppend(&text, "edge s", i, " e", i, " {id, gen v}\n");
    }
  }
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(text, "deep.ifds"));
  const Solution s = SolveReference(p);
  const Witnesses witnesses(p, s);
  const uint32_t r = NodeId(p, "r");
  EXPECT_TRUE(witnesses.Explain(r, 1, 1'000'000, 8).empty()) << "a chain within 8 calls";
  const std::vector<WitnessStep> chain = witnesses.Search(r, 1, 1'000'000);
  ASSERT_FALSE(chain.empty());
  EXPECT_EQ(Show(p, {chain.front()}), "origin s19/0; ");
  EXPECT_EQ(Show(p, {chain.back()}), "return r/v; ");
  EXPECT_EQ(std::count_if(chain.begin(), chain.end(),
                          [](const WitnessStep& step) { return step.kind == Kind::kReturn; }),
            kLevels);
  EXPECT_TRUE(Witnesses::Realizable(chain));
  EXPECT_EQ(Show(p, witnesses.FromTabulation(r, 1)), Show(p, chain));
}

// On generated problems, every pair of the solution but the zero fact's has a chain, and each
// chain's steps are pairs of the solution, each reached from the one before by a flow the
// problem has.
TEST(WitnessTest, EveryPairOfGeneratedSolutionsHasAChainOfRealFlows) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    GeneratorOptions options;
    options.seed = seed;
    options.procedures = 12;
    options.facts = 10;
    options.front_end_shape = seed % 2 == 0;
    ASSERT_OK_AND_ASSIGN(Problem p, Generate(options));
    const Solution s = SolveReference(p);
    const Witnesses witnesses(p, s);
    const auto holds = [&](uint32_t n, uint32_t d) {
      return std::binary_search(s.facts.begin(), s.facts.end(), std::make_pair(n, d));
    };
    const auto maps = [&](uint32_t flow, uint32_t from, uint32_t to) {
      std::vector<uint32_t> out;
      p.flows[flow].Apply(from, &out);
      return std::find(out.begin(), out.end(), to) != out.end();
    };
    // Searches that each end where they meet the chains found before them.
    Witnesses remembering(p, s);
    // One tabulation for every pair, which runs to its end, and one for each pair alone,
    // which stops once it reaches its pair: the same chains.
    const std::vector<std::vector<WitnessStep>> together = witnesses.FromTabulation(s.facts);
    ASSERT_EQ(together.size(), s.facts.size());
    for (size_t k = 0; k < s.facts.size(); ++k) {
      const auto& [node, fact] = s.facts[k];
      if (fact == kZeroFact) continue;
      EXPECT_EQ(Show(p, witnesses.FromTabulation(node, fact)), Show(p, together[k]))
          << "seed " << seed << ": " << p.node_names[node] << "/" << p.fact_names[fact];
    }
    for (const auto& [node, fact] : s.facts) {
      for (const char* way : {"searched", "tabulated", "remembered"}) {
      if (fact == kZeroFact) continue;
      SCOPED_TRACE(way);
      const std::string_view how = way;
      std::vector<WitnessStep> steps;
      if (how == "searched") steps = witnesses.Explain(node, fact, 1u << 20);
      if (how == "tabulated") steps = witnesses.FromTabulation(node, fact);
      if (how == "remembered") {
        steps = remembering.Search(node, fact, 1u << 20);
        remembering.Remember(steps);
      }
      ASSERT_GE(steps.size(), 2u) << "seed " << seed << ": no chain for " << p.node_names[node]
                                  << "/" << p.fact_names[fact];
      EXPECT_EQ(steps.front().kind, Kind::kOrigin);
      EXPECT_EQ(steps.front().fact, kZeroFact);
      EXPECT_EQ(steps.back().node, node);
      EXPECT_EQ(steps.back().fact, fact);
      for (size_t i = 1; i < steps.size(); ++i) {
        const WitnessStep& a = steps[i - 1];
        const WitnessStep& b = steps[i];
        ASSERT_TRUE(holds(a.node, a.fact));
        bool real = false;
        if (b.kind == Kind::kEdge) {
          for (const Edge& e : p.edges) real |= e.from == a.node && e.to == b.node &&
                                                maps(e.flow, a.fact, b.fact);
          for (const CallSite& c : p.call_sites) {
            real |= c.call == a.node && c.return_site == b.node &&
                    maps(c.call_to_return_flow, a.fact, b.fact);
          }
        } else {
          ASSERT_NE(b.kind, Kind::kOrigin);
          const CallSite& c = p.call_sites[b.call_site];
          for (const Callee& callee : p.CalleesOf(b.call_site)) {
            const Procedure& q = p.procedures[callee.procedure];
            real |= b.kind == Kind::kCall ? c.call == a.node && q.start == b.node &&
                                                maps(callee.call_flow, a.fact, b.fact)
                                          : q.exit == a.node && c.return_site == b.node &&
                                                maps(callee.return_flow, a.fact, b.fact);
          }
        }
        EXPECT_TRUE(real) << "seed " << seed << ", step " << i << " of the chain for "
                          << p.node_names[node] << "/" << p.fact_names[fact];
      }
      EXPECT_TRUE(Witnesses::Realizable(steps));
      }
    }
  }
}

}  // namespace
}  // namespace sluice::ifds
