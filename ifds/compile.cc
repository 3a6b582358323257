#include "sluice/ifds/compile.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"
#include "sluice/kernels/ifds.h"

namespace sluice::ifds {
namespace {

using kernels::ifds::GraphLayout;
using kernels::ifds::kMaxId;
using kernels::ifds::kNone;
using Sections = std::array<uint32_t*, GraphLayout::kNumSections>;
constexpr uint32_t kHeaderWords = GraphLayout::kFlowHeaderWords;
static_assert(GraphLayout::PackPair(2, 3) == PackPair(2, 3) &&
                  GraphLayout::PackPair(kMaxFacts - 1, 1) == PackPair(kMaxFacts - 1, 1),
              "a problem's pairs are copied to the device as they are");

static_assert(kHeaderWords == 3, "FlowHeader's words");

// The flows are written in this many ranges, each on a thread: `threads` of them, or without
// it one per core when there are enough flows to be worth a thread.
size_t FlowRanges(size_t flows, unsigned threads) {
  if (threads != 0) return std::clamp<size_t>(flows, 1, threads);
  constexpr size_t kFlowsPerThread = size_t{1} << 16;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::clamp<size_t>(flows / kFlowsPerThread, 1, cores);
}

// Flows are told compiled (FlowsCompiled) this many at a time.
constexpr size_t kFlowsPerRelease = size_t{1} << 15;

// Writes the headers and lists of range `r` of `ranges` of the flows (the ranges split them
// evenly) into their sections, telling `flows_compiled` of each piece written.
void WriteFlows(const FlowTable& flows, size_t r, size_t ranges, const Sections& section,
                const FlowsCompiled& flows_compiled, size_t elsewhere) {
  // Flows elsewhere have their places left as they are (a range's first flow past them reads
  // the last one's ends, which the problem keeps: FlowTable::Release).
  const size_t last = flows.size() * (r + 1) / ranges;
  const size_t first = std::min(last, std::max(flows.size() * r / ranges, elsewhere));
  const FlowTable::Begins begins = flows.begins(first);
  auto kill_at = static_cast<uint32_t>(begins.kills), gen_at = static_cast<uint32_t>(begins.gens),
       pair_at = static_cast<uint32_t>(begins.pairs);
  uint32_t* header = section[GraphLayout::kFlowHeaders] + kHeaderWords * uint64_t{first};
  uint32_t* const kills = section[GraphLayout::kKills];
  uint32_t* const gens = section[GraphLayout::kGens];
  uint32_t* const pairs = section[GraphLayout::kPairs];
  size_t untold = first;  // the first flow written and not yet told of
  for (size_t f = first; f < last; ++f) {
    const FlowView view = flows[f];
    const std::array<uint32_t, kHeaderWords> words =
        FlowHeader({.kills = kill_at, .gens = gen_at, .pairs = pair_at}, view.identity);
    header = std::copy(words.begin(), words.end(), header);
    std::copy(view.kills.begin(), view.kills.end(), kills + kill_at);
    kill_at += static_cast<uint32_t>(view.kills.size());
    std::copy(view.gens.begin(), view.gens.end(), gens + gen_at);
    gen_at += static_cast<uint32_t>(view.gens.size());
    // The problem's words are the device's (PackPair), sorted: the kernels binary-search them.
    std::copy(view.pairs.words().begin(), view.pairs.words().end(), pairs + pair_at);
    pair_at += static_cast<uint32_t>(view.pairs.size());
    if (flows_compiled && (f + 1 - untold == kFlowsPerRelease || f + 1 == last)) {
      flows_compiled(untold, f + 1);
      untold = f + 1;
    }
  }
}

}  // namespace

std::array<uint32_t, 3> FlowHeader(const FlowTable::Begins& begins, bool identity) {
  return {static_cast<uint32_t>(begins.kills) | (identity ? GraphLayout::kIdentityBit : 0),
          static_cast<uint32_t>(begins.gens), static_cast<uint32_t>(begins.pairs)};
}

absl::StatusOr<CompiledProblem> Compile(const Problem& p, unsigned threads,
                                        const FlowsCompiled& flows_compiled,
                                        const FlowsElsewhere& elsewhere,
                                        const PartCompiled& part_compiled) {
  if (elsewhere.count > p.flows.size() || elsewhere.outputs.size() < elsewhere.count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d flows are elsewhere, with %d outputs, and the problem has %d", elsewhere.count,
        elsewhere.outputs.size(), p.flows.size()));
  }
  const uint32_t nodes = p.node_count();
  // The device packs nodes, procedures and call edges into 31 bits of a tuple.
  if (nodes > kMaxId || p.procedures.size() > kMaxId) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the device solver takes at most %d nodes and procedures (the problem has %d and %d)",
        kMaxId, nodes, p.procedures.size()));
  }
  // A pair is one word of two 16-bit facts (GraphLayout::PackPair).
  if (p.fact_count() > kMaxFacts) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the device solver takes at most %d facts (the problem has %d)", kMaxFacts,
        p.fact_count()));
  }
  const uint64_t call_edges = p.callees.size();
  if (call_edges > kMaxId) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the device solver takes at most %d call edges (the problem has %d)", kMaxId,
        call_edges));
  }
  const uint64_t intra_count = p.edges.size() + p.call_sites.size();
  const FlowTable& flows = p.flows;

  // Every section's length is known up front, so the image is one buffer, written in place.
  std::array<uint64_t, GraphLayout::kNumSections> length{};
  length[GraphLayout::kIntraOffsets] = uint64_t{nodes} + 1;
  length[GraphLayout::kIntraEdges] = 2 * intra_count;
  length[GraphLayout::kCallOffsets] = uint64_t{nodes} + 1;
  length[GraphLayout::kCallEdges] = 5 * call_edges;
  length[GraphLayout::kProcStart] = p.procedures.size();
  length[GraphLayout::kExitProc] = nodes;
  length[GraphLayout::kReturnSite] = nodes;
  // A header per flow, and one past the last where the last flow's lists end.
  length[GraphLayout::kFlowHeaders] = kHeaderWords * (uint64_t{flows.size()} + 1);
  length[GraphLayout::kKills] = flows.kill_count();
  length[GraphLayout::kGens] = flows.gen_count();
  length[GraphLayout::kPairs] = flows.pair_count();
  length[GraphLayout::kSeedList] = 2 * uint64_t{p.seeds.size()};
  uint64_t total = GraphLayout::kHeaderWords;
  for (uint64_t l : length) total += l;
  if (total >= kNone) {
    return absl::ResourceExhaustedError("the compiled problem exceeds 2^32 words");
  }
  if (flows.kill_count() >= GraphLayout::kIdentityBit) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the device solver takes fewer than 2^31 kills in all (the problem has %d)",
        flows.kill_count()));
  }
  CompiledProblem out;
  out.call_edges = static_cast<uint32_t>(call_edges);
  out.intra_edges = static_cast<uint32_t>(intra_count);
  // Written whole, then uploaded: huge pages take a fault every 2 MiB of it, not every 4 KiB.
  ASSIGN_OR_RETURN(out.buffer,
                   MappedBuffer::Allocate(total * sizeof(uint32_t), /*huge_pages=*/true));
  const absl::Span<uint32_t> w = out.buffer.As<uint32_t>();
  w[GraphLayout::kMagic] = GraphLayout::kMagicValue;
  w[GraphLayout::kVersion] = GraphLayout::kVersionValue;
  w[GraphLayout::kFacts] = p.fact_count();
  w[GraphLayout::kNodes] = nodes;
  w[GraphLayout::kProcedures] = static_cast<uint32_t>(p.procedures.size());
  w[GraphLayout::kFlows] = static_cast<uint32_t>(flows.size());
  w[GraphLayout::kCallEdgeCount] = out.call_edges;
  w[GraphLayout::kSeeds] = static_cast<uint32_t>(p.seeds.size());
  w[GraphLayout::kSectionCount] = GraphLayout::kNumSections;
  Sections section;
  uint64_t at = GraphLayout::kHeaderWords;
  for (uint32_t s = 0; s < GraphLayout::kNumSections; ++s) {
    w[GraphLayout::kSectionTable + 2 * s] = static_cast<uint32_t>(at);
    w[GraphLayout::kSectionTable + 2 * s + 1] = static_cast<uint32_t>(length[s]);
    section[s] = w.data() + at;
    at += length[s];
  }

  // The flows (most of the image) are written a range each on threads of their own, and on
  // this one once it has written the structure. Once a flow is written it is read from the
  // image, not the problem (flows_compiled may have given it back).
  struct Writers {
    std::vector<std::thread> threads;
    void Join() {
      for (std::thread& thread : threads) thread.join();
      threads.clear();
    }
    ~Writers() { Join(); }  // on every way out, an exception's too
  } writers;
  const size_t ranges = FlowRanges(flows.size(), threads);
  for (size_t r = 1; r < ranges; ++r) {
    try {
      writers.threads.emplace_back([&section, &flows, &flows_compiled, r, ranges, &elsewhere] {
        WriteFlows(flows, r, ranges, section, flows_compiled, elsewhere.count);
      });
    } catch (const std::system_error&) {
      // No thread for it: written here.
      WriteFlows(flows, r, ranges, section, flows_compiled, elsewhere.count);
    }
  }

  // The structure, a part at a time, each told once the image holds it (part_compiled may
  // give it back): the problem's part shrinks as the image's grows. Each part is read from the
  // problem here only; what is read of it below (the reach) is read from the image.
  const auto told = [&part_compiled](ProblemPart part) {
    if (part_compiled) part_compiled(part);
  };

  // Intraprocedural edges (normal, then call-to-return) grouped by source node, each group in
  // that order: a counting sort, straight into the CSR. A node's offset is where its next edge
  // goes, so that it ends where the next node's group begins: then they all move up by one.
  uint32_t* const intra_offsets = section[GraphLayout::kIntraOffsets];
  uint32_t* const intra_edges = section[GraphLayout::kIntraEdges];
  for (const Edge& e : p.edges) ++intra_offsets[e.from + 1];
  for (const CallSite& c : p.call_sites) ++intra_offsets[c.call + 1];
  for (uint32_t n = 0; n < nodes; ++n) intra_offsets[n + 1] += intra_offsets[n];
  const auto place = [&](uint32_t from, uint32_t to, uint32_t flow) {
    const uint32_t e = intra_offsets[from]++;
    intra_edges[2 * uint64_t{e}] = to;
    intra_edges[2 * uint64_t{e} + 1] = flow;
  };
  for (const Edge& e : p.edges) place(e.from, e.to, e.flow);
  told(ProblemPart::kEdges);
  for (const CallSite& c : p.call_sites) place(c.call, c.return_site, c.call_to_return_flow);
  std::memmove(intra_offsets + 1, intra_offsets, uint64_t{nodes} * sizeof(uint32_t));
  intra_offsets[0] = 0;

  // Call edges: one per (call site, callee), grouped by call node; the id is the position.
  // Each node's return site holds its call site's index until the node's turn comes (a node
  // has at most one call site): no array of its own for a map from nodes to call sites.
  uint32_t* const call_offsets = section[GraphLayout::kCallOffsets];
  uint32_t* const call_edges_begin = section[GraphLayout::kCallEdges];
  uint32_t* call_edge = call_edges_begin;
  uint32_t* const return_site = section[GraphLayout::kReturnSite];
  std::fill_n(return_site, nodes, kNone);
  for (size_t k = 0; k < p.call_sites.size(); ++k) {
    return_site[p.call_sites[k].call] = static_cast<uint32_t>(k);
  }
  uint32_t edge_count = 0;
  for (uint32_t n = 0; n < nodes; ++n) {
    call_offsets[n] = edge_count;
    if (return_site[n] == kNone) continue;
    const uint32_t site = return_site[n];
    const CallSite* const c = &p.call_sites[site];
    return_site[n] = c->return_site;
    for (const Callee& callee : p.CalleesOf(site)) {
      *call_edge++ = n;
      *call_edge++ = callee.procedure;
      *call_edge++ = c->return_site;
      *call_edge++ = callee.call_flow;
      *call_edge++ = callee.return_flow;
      ++edge_count;
    }
  }
  call_offsets[nodes] = edge_count;
  told(ProblemPart::kCallSites);

  uint32_t* const proc_start = section[GraphLayout::kProcStart];
  uint32_t* const exit_proc = section[GraphLayout::kExitProc];
  std::fill_n(exit_proc, nodes, kNone);
  for (size_t q = 0; q < p.procedures.size(); ++q) {
    proc_start[q] = p.procedures[q].start;
    exit_proc[p.procedures[q].exit] = static_cast<uint32_t>(q);
  }
  told(ProblemPart::kProcedures);

  uint32_t* seed = section[GraphLayout::kSeedList];
  for (const auto& [n, d] : p.seeds) {
    *seed++ = n;
    *seed++ = d;
  }

  WriteFlows(flows, 0, ranges, section, flows_compiled, elsewhere.count);
  uint32_t* const past_last =
      section[GraphLayout::kFlowHeaders] + kHeaderWords * uint64_t{flows.size()};
  past_last[0] = static_cast<uint32_t>(flows.kill_count());
  past_last[1] = static_cast<uint32_t>(flows.gen_count());
  past_last[2] = static_cast<uint32_t>(flows.pair_count());
  writers.Join();

  // The facts flow f can yield (CompiledProblem::Reach), read from its header and the next's,
  // for each edge in the image: a node's call-to-return edge is the last of its group where it
  // has call edges (a call site has callees: Validate).
  const uint32_t* const header = section[GraphLayout::kFlowHeaders];
  const uint64_t id_yield = std::min<uint64_t>(p.fact_count(), 64);
  const auto yield = [&](uint32_t f) -> uint64_t {
    if (f < elsewhere.count) {
      const uint32_t outputs = elsewhere.outputs[f];
      return ((outputs >> 31) != 0 ? id_yield : 0) + (outputs & 0x7fffffffu);
    }
    const uint32_t* const h = header + kHeaderWords * uint64_t{f};
    const bool identity = (h[0] & GraphLayout::kIdentityBit) != 0;
    return (identity ? id_yield : 0) + (h[kHeaderWords + 1] - h[1]) +
           (h[kHeaderWords + 2] - h[2]);
  };
  for (uint32_t n = 0; n < nodes; ++n) {
    const uint32_t end = intra_offsets[n + 1];
    const bool calls = call_offsets[n + 1] != call_offsets[n];
    for (uint32_t e = intra_offsets[n]; e < end; ++e) {
      const uint64_t y = yield(intra_edges[2 * uint64_t{e} + 1]);
      (calls && e + 1 == end ? out.reach.call_to_return : out.reach.intra) += y;
    }
  }
  for (const uint32_t* c = call_edges_begin; c != call_edge; c += 5) {
    out.reach.calls += yield(c[3]);
    out.reach.returns += yield(c[4]);
  }
  return out;
}

}  // namespace sluice::ifds
