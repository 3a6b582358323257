// Random IFDS problems without the generator's regularity, for differential tests on every
// backend. Deterministic in the seed.
#ifndef SLUICE_TESTS_TESTING_UNSTRUCTURED_PROBLEM_H_
#define SLUICE_TESTS_TESTING_UNSTRUCTURED_PROBLEM_H_

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sluice/ifds/problem.h"

namespace sluice::testing {

// A problem with none of the generator's regularity: edges between any two nodes of a
// procedure (into its start, out of its exit, self loops, duplicates), call sites at any node
// (the start and the exit included) returning to any node of their procedure (the call node
// itself included), exits no path reaches, procedures of one node, seeds of any fact at any
// procedure's start, and now and then hundreds of facts.
inline ifds::Problem UnstructuredProblem(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto below = [&](uint64_t n) { return static_cast<uint32_t>(rng() % n); };
  const auto chance = [&](int percent) { return below(100) < static_cast<uint32_t>(percent); };
  ifds::Problem p;
  const uint32_t facts = seed % 10 == 0 ? 200 + below(200) : 2 + below(30);
  for (uint32_t d = 0; d < facts; ++d) p.fact_names.push_back(absl::StrCat("f", d));
  const auto fact = [&] { return 1 + below(facts - 1); };
  const auto flow = [&] {
    ifds::Flow f;
    f.identity = chance(60);
    const uint32_t items = below(4);
    for (uint32_t k = 0; k < items; ++k) {
      switch (below(3)) {
        case 0: f.kills.push_back(fact()); break;
        case 1: f.gens.push_back(fact()); break;
        default: {
          // One draw after the other: the order of a call's arguments is unspecified.
          const uint32_t from = chance(20) ? ifds::kZeroFact : fact();
          const uint32_t to = fact();
          f.pairs.emplace_back(from, to);
          break;
        }
      }
    }
    f.Normalize();
    p.flows.push_back(std::move(f));
    return static_cast<uint32_t>(p.flows.size() - 1);
  };
  const uint32_t procedures = 1 + below(10);
  std::vector<std::vector<uint32_t>> members(procedures);
  for (uint32_t q = 0; q < procedures; ++q) {
    const uint32_t nodes = 1 + below(16);
    for (uint32_t k = 0; k < nodes; ++k) {
      members[q].push_back(p.node_count());
      p.node_names.push_back(absl::StrCat("p", q, "n", k));
      p.node_procedure.push_back(q);
    }
    // The exit is usually the last node, sometimes any node (the start too).
    const uint32_t exit = chance(80) ? members[q].back() : members[q][below(nodes)];
    p.procedures.push_back(ifds::Procedure{absl::StrCat("p", q), members[q][0], exit});
  }
  for (uint32_t q = 0; q < procedures; ++q) {
    const std::vector<uint32_t>& m = members[q];
    const uint32_t edges = below(2 * static_cast<uint32_t>(m.size()) + 1);
    for (uint32_t k = 0; k < edges; ++k) {
      p.edges.push_back(ifds::Edge{m[below(m.size())], m[below(m.size())], flow()});
    }
    for (uint32_t n : m) {
      if (!chance(35)) continue;
      p.AddCallSite(ifds::CallSite{
          .call = n, .return_site = m[below(m.size())], .call_to_return_flow = flow()});
      const uint32_t callees = 1 + below(3);
      for (uint32_t k = 0; k < callees; ++k) p.AddCallee({below(procedures), flow(), flow()});
    }
  }
  p.seeds.emplace_back(p.procedures[0].start, ifds::kZeroFact);
  const uint32_t more = below(4);
  for (uint32_t k = 0; k < more; ++k) {
    const uint32_t start = p.procedures[below(procedures)].start;
    const uint32_t fact_id = chance(30) ? ifds::kZeroFact : fact();
    p.seeds.emplace_back(start, fact_id);
  }
  return p;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_UNSTRUCTURED_PROBLEM_H_
