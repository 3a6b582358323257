// A problem's containers: node names held as views of one array, and flows built in place in a
// FlowTable as the text parser builds them.
#include "sluice/ifds/problem.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace sluice::ifds {
namespace {

TEST(NameListTest, NamesAreViewsThatAnEditAndARemovalKeepInPlace) {
  NameList names = {"start", "", "a.much.longer.name.than.sixteen.bytes", "exit"};
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0], "start");
  EXPECT_EQ(names[1], "");
  EXPECT_EQ(names[2], "a.much.longer.name.than.sixteen.bytes");
  EXPECT_EQ(names.back(), "exit");
  // Longer, then shorter: the names after it are unchanged.
  names.Set(1, "middle");
  names.Set(2, "x");
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.end()),
            (std::vector<std::string>{"start", "middle", "x", "exit"}));
  const auto found = std::find(names.begin(), names.end(), "x");
  EXPECT_EQ(found - names.begin(), 2);
  names.pop_back();
  names.push_back("end");
  EXPECT_EQ(names.back(), "end");
  EXPECT_EQ(names, (NameList{"start", "middle", "x", "end"}));
  // A name of the list's own, added or set again, is copied before the list's bytes move.
  for (int k = 0; k < 64; ++k) names.push_back(names[1]);
  names.Set(0, names[2]);
  names.Set(2, names[1]);
  EXPECT_EQ(names.size(), 68u);
  EXPECT_EQ(names[0], "x");
  EXPECT_EQ(names[2], "middle");
  EXPECT_EQ(names.back(), "middle");
  EXPECT_NE(names, (NameList{"start", "middle", "xend"}));
}

// Built in place, a flow's lists are what Flow::Normalize makes of them: sorted, each entry
// once, no kill of the zero fact; Truncate drops ended flows and entries not yet ended.
TEST(FlowTableTest, AFlowBuiltInPlaceIsNormalizedAsAFlowIs) {
  std::mt19937_64 random(20261205);
  FlowTable table;
  std::vector<Flow> expected;
  for (int f = 0; f < 200; ++f) {
    Flow flow;
    flow.identity = random() % 2 == 0;
    const auto fact = [&] { return static_cast<uint32_t>(random() % 12); };
    for (uint64_t k = random() % 6; k > 0; --k) flow.kills.push_back(fact());
    for (uint64_t k = random() % 6; k > 0; --k) flow.gens.push_back(fact());
    for (uint64_t k = random() % 9; k > 0; --k) flow.pairs.emplace_back(fact(), fact());
    for (uint32_t d : flow.kills) table.AddKill(d);
    for (uint32_t d : flow.gens) table.AddGen(d);
    for (const auto& [d, t] : flow.pairs) table.AddPair(d, t);
    table.EndFlow(flow.identity);
    flow.Normalize();
    expected.push_back(flow);
  }
  ASSERT_EQ(table.size(), expected.size());
  for (size_t f = 0; f < expected.size(); ++f) {
    const FlowView got = table[f];
    EXPECT_TRUE(got.Normalized()) << f;
    EXPECT_EQ(got.identity, expected[f].identity) << f;
    EXPECT_TRUE(std::ranges::equal(got.kills, expected[f].kills)) << f;
    EXPECT_TRUE(std::ranges::equal(got.gens, expected[f].gens)) << f;
    EXPECT_TRUE(std::ranges::equal(got.pairs, expected[f].pairs)) << f;
  }
  // Entries of a flow not ended, and the flows from 150 on, go.
  table.AddPair(3, 4);
  table.AddKill(5);
  table.Truncate(150);
  ASSERT_EQ(table.size(), 150u);
  const FlowTable::Begins end = table.begins(150);
  EXPECT_EQ(end.pairs, table.pair_count());
  EXPECT_EQ(end.kills, table.kill_count());
  EXPECT_EQ(end.gens, table.gen_count());
  table.AddGen(7);
  table.EndFlow(false);
  EXPECT_TRUE(std::ranges::equal(table[150].gens, std::vector<uint32_t>{7}));
  EXPECT_TRUE(table[150].pairs.empty());
  EXPECT_TRUE(std::ranges::equal(table[149].pairs, expected[149].pairs));
}

// A flow's kill and gen ends are kept once some flow has a kill or a gen: a table of pairs
// alone (a front end's) takes 5 bytes a flow beyond its lists. Whichever way a table keeps its
// ends, its flows read the same, Append and Truncate keep them, and tables of the same flows
// are equal.
TEST(FlowTableTest, KillAndGenEndsAreKeptOnceAFlowHasOneAndTheFlowsReadTheSame) {
  std::mt19937_64 random(20261207);
  const auto fact = [&] { return static_cast<uint32_t>(1 + random() % 12); };
  // Pairs alone, then kills from flow 100 on, then gens too from flow 150 on.
  const auto make = [&](int f) {
    Flow flow;
    flow.identity = random() % 2 == 0;
    for (uint64_t k = random() % 4; k > 0; --k) flow.pairs.emplace_back(fact(), fact());
    if (f == 100 || (f > 100 && random() % 3 == 0)) flow.kills = {fact()};
    if (f == 150 || (f > 150 && random() % 3 == 0)) flow.gens = {fact(), fact()};
    flow.Normalize();
    return flow;
  };
  std::vector<Flow> flows;
  for (int f = 0; f < 200; ++f) flows.push_back(make(f));
  const auto build = [&](size_t first, size_t last) {
    FlowTable table;
    for (size_t f = first; f < last; ++f) table.push_back(flows[f]);
    return table;
  };
  const auto reads_as = [&](const FlowTable& table, std::vector<Flow> expected) {
    if (table.size() != expected.size()) return false;
    for (size_t f = 0; f < expected.size(); ++f) {
      if (table[f].identity != expected[f].identity ||
          !std::ranges::equal(table[f].kills, expected[f].kills) ||
          !std::ranges::equal(table[f].gens, expected[f].gens) ||
          !std::ranges::equal(table[f].pairs, expected[f].pairs)) {
        return false;
      }
    }
    return true;
  };
  const auto slice = [&](size_t first, size_t last) {
    return std::vector<Flow>(flows.begin() + first, flows.begin() + last);
  };

  FlowTable table = build(0, 100);
  EXPECT_EQ(table.ends_bytes(), 100u * 5);
  table.push_back(flows[100]);
  EXPECT_EQ(table.ends_bytes(), 101u * 9);
  for (size_t f = 101; f < 200; ++f) table.push_back(flows[f]);
  EXPECT_EQ(table.ends_bytes(), 200u * 13);
  EXPECT_TRUE(reads_as(table, flows));
  EXPECT_EQ(table.begins(200).kills, table.kill_count());
  EXPECT_EQ(table.begins(200).gens, table.gen_count());

  // Appended either way round, and pairs alone to pairs alone.
  FlowTable pairs_then_more = build(0, 60);
  pairs_then_more.Append(build(60, 200));
  EXPECT_TRUE(reads_as(pairs_then_more, flows));
  EXPECT_EQ(pairs_then_more, table);
  FlowTable more_then_pairs = build(120, 200);
  more_then_pairs.Append(build(0, 100));
  std::vector<Flow> expected = slice(120, 200);
  for (size_t f = 0; f < 100; ++f) expected.push_back(flows[f]);
  EXPECT_TRUE(reads_as(more_then_pairs, expected));
  FlowTable pairs = build(0, 50);
  pairs.Append(build(50, 100));
  EXPECT_EQ(pairs.ends_bytes(), 100u * 5);
  EXPECT_TRUE(reads_as(pairs, slice(0, 100)));

  // Cut back to before the first kill: the same flows as a table that never had one.
  FlowTable cut = table;
  cut.Truncate(100);
  EXPECT_TRUE(reads_as(cut, slice(0, 100)));
  EXPECT_EQ(cut, pairs);
  EXPECT_EQ(pairs, cut);
  EXPECT_NE(cut, table);
  cut.push_back(flows[100]);
  EXPECT_TRUE(reads_as(cut, slice(0, 101)));

  // Sized first and filled in place, with no kills or gens.
  FlowTable filled;
  filled.Resize(100, 0, 0, pairs.pair_count());
  for (size_t f = 0; f < 100; ++f) {
    const FlowTable::Begins at = pairs.begins(f);
    const FlowTable::Lists lists = filled.Fill(f, flows[f].identity, at, 0, 0,
                                               static_cast<uint32_t>(flows[f].pairs.size()));
    std::ranges::copy(pairs[f].pairs.words(), lists.pairs.begin());
  }
  EXPECT_EQ(filled.ends_bytes(), 100u * 5);
  EXPECT_TRUE(reads_as(filled, slice(0, 100)));
  EXPECT_EQ(filled, pairs);

  // The same entries, ended elsewhere, are other flows.
  Flow both, first, second;
  both.kills = {1, 2};
  first.kills = {1};
  second.kills = {2};
  FlowTable one, other;
  one.push_back(both);
  one.push_back(Flow{});
  other.push_back(first);
  other.push_back(second);
  EXPECT_NE(one, other);
}

}  // namespace
// A pair is one word: its facts come back as they went in, words sort as their pairs do, and
// a fact past the 16 bits, which no problem may have, is not wrapped into one it may have.
TEST(FlowTableTest, APairIsOneWordSortedAsItsFactsAndAFactPastTheLimitIsStillRefused) {
  std::mt19937_64 random(20261206);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (int k = 0; k < 1000; ++k) {
    pairs.emplace_back(static_cast<uint32_t>(random() % kMaxFacts),
                       static_cast<uint32_t>(random() % kMaxFacts));
  }
  pairs.emplace_back(kMaxFacts - 1, kMaxFacts - 1);
  pairs.emplace_back(0, 0);
  Flow flow;
  for (const auto& pair : pairs) flow.pairs.push_back(pair);
  for (size_t k = 0; k < pairs.size(); ++k) EXPECT_EQ(flow.pairs[k], pairs[k]) << k;
  flow.Normalize();
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  EXPECT_TRUE(std::ranges::equal(flow.pairs, pairs));
  EXPECT_TRUE(flow.View().Normalized());

  Problem p;
  p.fact_names.resize(kMaxFacts);
  Flow wide;
  wide.pairs = {{kMaxFacts + 4465, 1}};  // wrapped to 16 bits it would be fact 4464
  p.flows.push_back(wide);
  EXPECT_EQ(p.flows[0].pairs[0].first, kMaxFacts);
  const absl::Status status = Validate(p);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "a flow function maps an unknown fact");
  p.flows.clear();
  wide.pairs = {{4464, 1}};
  p.flows.push_back(wide);
  EXPECT_TRUE(Validate(p).ok()) << Validate(p);
}

// What only compiling reads goes back whole, memory and all: assigning `{}` to a vector
// would keep it.
TEST(FlowTableTest, ThePartsACompileReadsAreFreedMemoryAndAll) {
  Problem p;
  p.fact_names = {"0"};
  Flow flow;
  flow.pairs = {{0, 0}};
  for (int k = 0; k < 1000; ++k) p.flows.push_back(flow);
  p.edges.resize(1000);
  p.call_sites.resize(100);
  p.callees.resize(300);
  p.procedures.resize(10);
  p.node_procedure.resize(1000);
  p.node_names = {"a", "b"};
  p.seeds = {{0, 0}};
  FreeCompiledParts(&p);
  EXPECT_EQ(p.flows.size(), 0u);
  EXPECT_EQ(p.flows.pair_count(), 0u);
  EXPECT_EQ(p.edges.capacity(), 0u);
  EXPECT_EQ(p.call_sites.capacity(), 0u);
  EXPECT_EQ(p.callees.capacity(), 0u);
  EXPECT_EQ(p.procedures.capacity(), 0u);
  EXPECT_EQ(p.node_procedure.capacity(), 0u);
  // What the answer needs stays.
  EXPECT_EQ(p.node_names, (NameList{"a", "b"}));
  EXPECT_EQ(p.fact_names, std::vector<std::string>{"0"});
  EXPECT_EQ(p.seeds.size(), 1u);
}

// Flows checked on their own (ValidateFlows, as a reader checks them before it gives their
// lists away) fail as Validate does; Validate told they were checked reads them no more.
TEST(FlowTableTest, FlowsCheckedOnTheirOwnFailAsValidateDoesAndAreNotReadAgain) {
  Problem p;
  p.fact_names = {"0", "a", "b"};
  Flow good;
  good.pairs = {{1, 2}};
  Flow bad;
  bad.gens = {7};  // no such fact
  p.flows.push_back(good);
  p.flows.push_back(bad);
  p.flows.push_back(good);
  const absl::Status whole = Validate(p);
  EXPECT_EQ(whole.message(), "a flow function generates an unknown fact");
  EXPECT_EQ(ValidateFlows(p, 1, 2), whole);
  EXPECT_TRUE(ValidateFlows(p, 0, 1).ok());
  EXPECT_TRUE(ValidateFlows(p, 2, 3).ok());
  EXPECT_EQ(Validate(p, 1), whole);
  EXPECT_TRUE(Validate(p, 2).ok()) << Validate(p, 2);
}

// Every call site's callees lie in one array, site after site: a site's run begins where the
// last one's ends. Validate refuses runs that go back, past the array, or leave callees to no
// site, with the site named, rather than reading outside the array.
TEST(CallSiteTest, CalleesAreRunsOfOneArrayAndValidateChecksThem) {
  using ::sluice::testing::StatusIs;
  using ::testing::HasSubstr;
  Problem p;
  p.fact_names = {"0"};
  p.node_names = {"s", "c", "r", "e", "t", "x"};
  p.node_procedure = {0, 0, 0, 0, 1, 1};
  p.procedures.push_back(Procedure{"m", 0, 3});
  p.procedures.push_back(Procedure{"q", 4, 5});
  p.flows.push_back(Flow{.identity = true});
  p.AddCallSite(CallSite{.call = 1, .return_site = 2});
  p.AddCallee(Callee{1, 0, 0});
  p.AddCallee(Callee{0, 0, 0});
  p.AddCallSite(CallSite{.call = 2, .return_site = 3});
  p.AddCallee(Callee{1, 0, 0});
  ASSERT_TRUE(Validate(p).ok()) << Validate(p);
  ASSERT_EQ(p.CalleesOf(0).size(), 2u);
  EXPECT_EQ(p.CalleesOf(0)[1].procedure, 0u);
  ASSERT_EQ(p.CalleesOf(1).size(), 1u);
  EXPECT_EQ(p.CalleesOf(1)[0].procedure, 1u);
  Problem back = p;
  back.call_sites[1].callees_end = 1;
  EXPECT_THAT(Validate(back), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("call site r says its callees end at 1")));
  Problem past = p;
  past.call_sites[1].callees_end = 4;
  EXPECT_THAT(Validate(past), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("past the problem's 3")));
  Problem unowned = p;
  unowned.callees.push_back(Callee{1, 0, 0});
  EXPECT_THAT(Validate(unowned), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("1 callees belong to no call site")));
  Problem none = p;
  none.call_sites[1].callees_end = 2;
  none.callees.pop_back();
  EXPECT_THAT(Validate(none), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("call site r has 0 callees")));
}

}  // namespace sluice::ifds
