#include "sluice/ifds/compile.h"

#include <algorithm>
#include <array>

#include "absl/strings/str_format.h"
#include "sluice/kernels/ifds.h"

namespace sluice::ifds {
namespace {

using kernels::ifds::GraphLayout;
using kernels::ifds::kMaxId;
using kernels::ifds::kNone;

}  // namespace

absl::StatusOr<CompiledProblem> Compile(const Problem& p) {
  const uint32_t nodes = p.node_count();
  // The device packs nodes, procedures and call edges into 31 bits of a tuple.
  if (nodes > kMaxId || p.procedures.size() > kMaxId) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the device solver takes at most %d nodes and procedures (the problem has %d and %d)",
        kMaxId, nodes, p.procedures.size()));
  }
  std::array<std::vector<uint32_t>, GraphLayout::kNumSections> sections;

  // Intraprocedural edges: normal edges and call-to-return edges, grouped by source node.
  std::vector<std::array<uint32_t, 3>> intra;
  intra.reserve(p.edges.size() + p.call_sites.size());
  for (const Edge& e : p.edges) intra.push_back({e.from, e.to, e.flow});
  for (const CallSite& c : p.call_sites) {
    intra.push_back({c.call, c.return_site, c.call_to_return_flow});
  }
  std::stable_sort(intra.begin(), intra.end(),
                   [](const auto& a, const auto& b) { return a[0] < b[0]; });
  auto& intra_offsets = sections[GraphLayout::kIntraOffsets];
  auto& intra_edges = sections[GraphLayout::kIntraEdges];
  intra_offsets.assign(uint64_t{nodes} + 1, 0);
  for (const auto& e : intra) ++intra_offsets[e[0] + 1];
  for (uint32_t n = 0; n < nodes; ++n) intra_offsets[n + 1] += intra_offsets[n];
  intra_edges.reserve(2 * intra.size());
  for (const auto& e : intra) {
    intra_edges.push_back(e[1]);
    intra_edges.push_back(e[2]);
  }

  // Call edges: one per (call site, callee), grouped by call node; the id is the position.
  std::vector<const CallSite*> by_node(nodes, nullptr);
  for (const CallSite& c : p.call_sites) by_node[c.call] = &c;
  auto& call_offsets = sections[GraphLayout::kCallOffsets];
  auto& call_edges = sections[GraphLayout::kCallEdges];
  auto& return_site = sections[GraphLayout::kReturnSite];
  call_offsets.assign(uint64_t{nodes} + 1, 0);
  return_site.assign(nodes, kNone);
  uint64_t edge_count = 0;
  for (uint32_t n = 0; n < nodes; ++n) {
    call_offsets[n] = static_cast<uint32_t>(edge_count);
    const CallSite* c = by_node[n];
    if (c == nullptr) continue;
    return_site[n] = c->return_site;
    for (const Callee& callee : c->callees) {
      call_edges.insert(call_edges.end(),
                        {n, callee.procedure, c->return_site, callee.call_flow,
                         callee.return_flow});
      ++edge_count;
    }
  }
  if (edge_count > kMaxId) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the device solver takes at most %d call edges (the problem has %d)", kMaxId,
        edge_count));
  }
  call_offsets[nodes] = static_cast<uint32_t>(edge_count);

  auto& proc_start = sections[GraphLayout::kProcStart];
  auto& exit_proc = sections[GraphLayout::kExitProc];
  exit_proc.assign(nodes, kNone);
  for (size_t q = 0; q < p.procedures.size(); ++q) {
    proc_start.push_back(p.procedures[q].start);
    exit_proc[p.procedures[q].exit] = static_cast<uint32_t>(q);
  }

  auto& headers = sections[GraphLayout::kFlowHeaders];
  auto& kills = sections[GraphLayout::kKills];
  auto& gens = sections[GraphLayout::kGens];
  auto& sources = sections[GraphLayout::kPairSources];
  auto& targets = sections[GraphLayout::kPairTargets];
  for (const Flow& f : p.flows) {
    headers.push_back(f.identity ? 1 : 0);
    headers.push_back(static_cast<uint32_t>(kills.size()));
    kills.insert(kills.end(), f.kills.begin(), f.kills.end());
    headers.push_back(static_cast<uint32_t>(kills.size()));
    headers.push_back(static_cast<uint32_t>(gens.size()));
    gens.insert(gens.end(), f.gens.begin(), f.gens.end());
    headers.push_back(static_cast<uint32_t>(gens.size()));
    headers.push_back(static_cast<uint32_t>(sources.size()));
    for (const auto& [a, b] : f.pairs) {  // sorted by source: the kernels binary-search it
      sources.push_back(a);
      targets.push_back(b);
    }
    headers.push_back(static_cast<uint32_t>(sources.size()));
  }
  auto& seeds = sections[GraphLayout::kSeedList];
  for (const auto& [n, d] : p.seeds) {
    seeds.push_back(n);
    seeds.push_back(d);
  }

  uint64_t total = GraphLayout::kHeaderWords;
  for (const auto& s : sections) total += s.size();
  if (total >= kNone) {
    return absl::ResourceExhaustedError("the compiled problem exceeds 2^32 words");
  }
  CompiledProblem out;
  out.call_edges = static_cast<uint32_t>(edge_count);
  out.intra_edges = static_cast<uint32_t>(intra.size());
  std::vector<uint32_t>& w = out.words;
  w.reserve(total);
  w.resize(GraphLayout::kHeaderWords, 0);
  w[GraphLayout::kMagic] = GraphLayout::kMagicValue;
  w[GraphLayout::kVersion] = GraphLayout::kVersionValue;
  w[GraphLayout::kFacts] = p.fact_count();
  w[GraphLayout::kNodes] = nodes;
  w[GraphLayout::kProcedures] = static_cast<uint32_t>(p.procedures.size());
  w[GraphLayout::kFlows] = static_cast<uint32_t>(p.flows.size());
  w[GraphLayout::kCallEdgeCount] = out.call_edges;
  w[GraphLayout::kSeeds] = static_cast<uint32_t>(p.seeds.size());
  w[GraphLayout::kSectionCount] = GraphLayout::kNumSections;
  for (uint32_t s = 0; s < GraphLayout::kNumSections; ++s) {
    w[GraphLayout::kSectionTable + 2 * s] = static_cast<uint32_t>(w.size());
    w[GraphLayout::kSectionTable + 2 * s + 1] = static_cast<uint32_t>(sections[s].size());
    w.insert(w.end(), sections[s].begin(), sections[s].end());
  }
  return out;
}

}  // namespace sluice::ifds
