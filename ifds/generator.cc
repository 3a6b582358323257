#include "sluice/ifds/generator.h"

#include <algorithm>
#include <array>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sluice::ifds {
namespace {

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  // Uniform in [0, n); n > 0. Modulo bias is irrelevant here; portability across standard
  // libraries matters more, so no <random> distributions.
  uint64_t Below(uint64_t n) { return rng_() % n; }
  bool Chance(double p) { return static_cast<double>(rng_() >> 11) * 0x1.0p-53 < p; }

 private:
  std::mt19937_64 rng_;
};

Flow RandomFlow(Random& rng, const GeneratorOptions& o, uint32_t facts) {
  Flow f;
  f.identity = rng.Chance(o.identity);
  for (uint32_t d = 1; d < facts; ++d) {
    if (f.identity && rng.Chance(o.kill_rate)) f.kills.push_back(d);
    if (rng.Chance(o.gen_rate)) f.gens.push_back(d);
  }
  // Explicit pairs: about pair_rate * facts of them, so large fact sets stay cheap. A pair maps
  // to a fact other than zero, so with the zero fact alone there are none.
  if (facts < 2) {
    f.Normalize();
    return f;
  }
  const uint64_t pairs = static_cast<uint64_t>(o.pair_rate * facts + 0.5) + (rng.Chance(o.pair_rate) ? 1 : 0);
  for (uint64_t i = 0; i < pairs; ++i) {
    f.pairs.emplace_back(static_cast<uint32_t>(rng.Below(facts)),
                         static_cast<uint32_t>(1 + rng.Below(facts - 1)));
  }
  f.Normalize();
  return f;
}

// The front-end shape's flows (GeneratorOptions::front_end_shape): explicit pairs over the
// facts in scope, each scope sorted.
class ScopedFlows {
 public:
  ScopedFlows(Random& rng, const GeneratorOptions& o, uint32_t facts, uint32_t procedures)
      : rng_(rng), o_(o), scopes_(procedures), in_scope_(procedures) {
    const uint32_t size = std::min(o.scope, facts - 1);
    std::vector<uint32_t> all(facts - 1);
    for (uint32_t d = 1; d < facts; ++d) all[d - 1] = d;
    for (uint32_t q = 0; q < procedures; ++q) {
      // A partial Fisher-Yates shuffle draws `size` distinct facts.
      for (uint32_t i = 0; i < size; ++i) {
        std::swap(all[i], all[i + rng.Below(all.size() - i)]);
      }
      scopes_[q].assign(all.begin(), all.begin() + size);
      std::sort(scopes_[q].begin(), scopes_[q].end());
      in_scope_[q].assign(facts, false);
      for (uint32_t d : scopes_[q]) in_scope_[q][d] = true;
    }
  }

  // An edge within procedure q (call_to_return: around a call, with no gens).
  Flow Edge(uint32_t q, bool call_to_return) {
    Flow f;
    const std::vector<uint32_t>& scope = scopes_[q];
    for (uint32_t d : scope) {
      if (!rng_.Chance(o_.kill_rate)) f.pairs.emplace_back(d, d);
      if (rng_.Chance(o_.pair_rate)) f.pairs.emplace_back(d, Any(q));
      if (!call_to_return && rng_.Chance(o_.gen_rate)) f.pairs.emplace_back(kZeroFact, d);
    }
    f.Normalize();
    return f;
  }

  // From procedure `from`'s facts to procedure `to`'s: the shared facts, and per fact of `from`
  // a mapping to one of `to` (an argument, or a result).
  Flow Across(uint32_t from, uint32_t to) {
    Flow f;
    for (uint32_t d : scopes_[from]) {
      if (in_scope_[to][d]) f.pairs.emplace_back(d, d);
      if (rng_.Chance(o_.pair_rate)) f.pairs.emplace_back(d, Any(to));
    }
    f.Normalize();
    return f;
  }

 private:
  uint32_t Any(uint32_t q) { return scopes_[q][rng_.Below(scopes_[q].size())]; }

  Random& rng_;
  const GeneratorOptions& o_;
  std::vector<std::vector<uint32_t>> scopes_;
  std::vector<std::vector<bool>> in_scope_;
};

// Procedure q's name as a C front end would have it (GeneratorOptions::front_end_names): a
// module's prefix, a word and q, so that no two procedures share a name.
std::string FrontEndName(uint32_t q) {
  static constexpr std::array<const char*, 12> kPrefixes = {
      "luaV_", "luaH_", "luaK_", "str_", "buf_", "xml_", "http_", "json_", "",
      "io_", "gz_", "bfd_"};
  static constexpr std::array<const char*, 16> kWords = {
      "execute", "getshortstr", "read", "append", "parse_header", "next", "init", "free_all",
      "lookup", "write", "flush", "resize", "compare", "copy_out", "settable", "close"};
  return absl::StrCat(kPrefixes[q % kPrefixes.size()],
                      kWords[(q / kPrefixes.size()) % kWords.size()], q);
}

}  // namespace

absl::StatusOr<Problem> Generate(const GeneratorOptions& o) {
  // Every size is checked before anything is generated, in 64 bits, so no option can wrap or
  // run the generator out of memory.
  if (o.procedures == 0) return absl::InvalidArgumentError("at least one procedure");
  if (uint64_t{o.facts} + 1 > kMaxFacts) {  // the zero fact besides
    return absl::InvalidArgumentError(absl::StrFormat("at most %d facts", kMaxFacts - 1));
  }
  // Bodies average nodes_per_procedure nodes and are at most twice that long.
  const uint64_t body = 2 * uint64_t{o.nodes_per_procedure} + 1;
  if (o.procedures > kMaxGeneratedNodes / body) {  // divided, so the product cannot wrap
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d procedures of up to %d nodes each can exceed the generator's %d nodes",
        o.procedures, 2 * uint64_t{o.nodes_per_procedure} + 1, kMaxGeneratedNodes));
  }
  if (o.max_callees == 0 || o.max_callees > kMaxCallees) {
    return absl::InvalidArgumentError(
        absl::StrFormat("max_callees must be 1 to %d", kMaxCallees));
  }
  for (const auto& [name, rate] : {std::pair{"call_density", o.call_density},
                                   {"recursion", o.recursion}, {"unreachable", o.unreachable},
                                   {"identity", o.identity}, {"gen_rate", o.gen_rate},
                                   {"kill_rate", o.kill_rate}, {"pair_rate", o.pair_rate},
                                   {"branch", o.branch}, {"loop", o.loop}}) {
    if (!(rate >= 0 && rate <= 1)) {
      return absl::InvalidArgumentError(absl::StrFormat("%s must be 0 to 1, not %g", name, rate));
    }
  }
  // At most three flow functions per node (its edges) plus two per callee at a call site, each
  // listing about (gen_rate + kill_rate + 2 pair_rate) x facts facts. (The front-end shape's
  // flows list up to three entries per fact in scope, so its bound is counted as they are
  // made instead: the worst case would refuse every large problem.)
  const double flows = static_cast<double>(uint64_t{o.procedures} * body) *
                       (3 + (o.call_density > 0 ? 2.0 * o.max_callees : 0.0));
  const double per_flow = (o.facts + 1.0) * (o.gen_rate + o.kill_rate + 2 * o.pair_rate) + 2;
  // The front-end shape's expected size is refused up front too, the count above stopping
  // what the expectation lets through.
  const double expected_entries =
      static_cast<double>(o.procedures) * (o.nodes_per_procedure + 1.0) *
      (1 + o.branch + o.loop + o.call_density * (1 + o.max_callees)) *
      std::min(o.scope, o.facts) * (1 + o.gen_rate + o.pair_rate);
  if (o.front_end_shape && expected_entries > kMaxGeneratedFlowFacts) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "these options make about %.3g flow-function entries, more than the generator's %d",
        expected_entries, kMaxGeneratedFlowFacts));
  }
  if (!o.front_end_shape && flows * per_flow > kMaxGeneratedFlowFacts) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "these options can make %.3g flow-function entries, more than the generator's %d",
        flows * per_flow, kMaxGeneratedFlowFacts));
  }
  if (o.front_end_shape && (o.scope == 0 || o.facts == 0)) {
    return absl::InvalidArgumentError("the front-end shape needs facts and a scope of 1 or more");
  }
  if (o.front_end_shape &&
      uint64_t{o.procedures} * (uint64_t{o.facts} + 1) > kMaxGeneratedFlowFacts) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d procedures' scopes over %d facts are more than the generator's %d entries",
        o.procedures, o.facts + 1, kMaxGeneratedFlowFacts));
  }
  Random rng(o.seed);
  Problem p;
  const uint32_t facts = o.facts + 1;
  p.fact_names.push_back("0");
  for (uint32_t d = 1; d < facts; ++d) p.fact_names.push_back(absl::StrCat("v", d));

  // The last procedures are unreachable: no call site ever names them.
  const uint32_t unreachable = std::min<uint32_t>(
      static_cast<uint32_t>(o.unreachable * o.procedures), o.procedures - 1);
  const uint32_t reachable = o.procedures - unreachable;
  std::vector<std::vector<uint32_t>> bodies(o.procedures);
  for (uint32_t q = 0; q < o.procedures; ++q) {
    const std::string name = q == 0                ? "main"
                             : o.front_end_names ? FrontEndName(q)
                                                 : absl::StrCat("p", q);
    // Body length varies around the average; a body of one node is a start that is its exit.
    const uint32_t length =
        o.nodes_per_procedure == 0 ? 1
                                   : 1 + static_cast<uint32_t>(rng.Below(2 * o.nodes_per_procedure));
    std::vector<uint32_t>& body = bodies[q];
    for (uint32_t i = 0; i < length; ++i) {
      body.push_back(p.node_count());
      if (o.front_end_names) {
        p.node_names.push_back(i == 0            ? absl::StrCat(name, ":entry")
                               : i + 1 == length ? absl::StrCat(name, ":exit")
                                                 : absl::StrCat(name, ":", i));
      } else {
        p.node_names.push_back(length == 1 ? absl::StrCat(name, ".only")
                               : i == 0    ? absl::StrCat(name, ".start")
                               : i + 1 == length ? absl::StrCat(name, ".exit")
                                                 : absl::StrCat(name, ".", i));
      }
      p.node_procedure.push_back(q);
    }
    p.procedures.push_back(Procedure{name, body.front(), body.back()});
  }
  std::optional<ScopedFlows> scoped;
  if (o.front_end_shape) scoped.emplace(rng, o, facts, o.procedures);
  // Flow `kind` of procedure q (to `other`, for a call or a return).
  enum class Kind { kEdge, kCallToReturn, kCall, kReturn };
  uint64_t entries = 0;  // listed in the front-end shape's flows so far
  const auto add_flow = [&](Kind kind, uint32_t q, uint32_t other) {
    if (!scoped.has_value()) {
      p.flows.push_back(RandomFlow(rng, o, facts));
    } else if (kind == Kind::kCall) {
      p.flows.push_back(scoped->Across(q, other));
    } else if (kind == Kind::kReturn) {
      p.flows.push_back(scoped->Across(other, q));
    } else {
      p.flows.push_back(scoped->Edge(q, kind == Kind::kCallToReturn));
    }
    const FlowView made = p.flows[p.flows.size() - 1];
    entries += made.kills.size() + made.gens.size() + made.pairs.size();
    return static_cast<uint32_t>(p.flows.size() - 1);
  };
  for (uint32_t q = 0; q < o.procedures; ++q) {
    const std::vector<uint32_t>& body = bodies[q];
    for (size_t i = 0; i + 1 < body.size(); ++i) {
      // A node adds at most 3 + 2 max_callees flows of at most 3 x scope entries each.
      if (entries > kMaxGeneratedFlowFacts) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "these options make more than the generator's %d flow-function entries",
            kMaxGeneratedFlowFacts));
      }
      const uint32_t n = body[i];
      const uint32_t next = body[i + 1];
      // Call sites: not at the start (the start stays a plain entry), the next node returns.
      // In the front-end shape main is a driver, a call at every node of its body, so that
      // what the problem reaches does not hang on a few draws.
      const double call_chance = o.front_end_shape && q == 0 ? 1.0 : o.call_density;
      if (i > 0 && rng.Chance(call_chance)) {
        p.AddCallSite(CallSite{.call = n, .return_site = next,
                               .call_to_return_flow = add_flow(Kind::kCallToReturn, q, q)});
        const uint32_t callees = 1 + static_cast<uint32_t>(rng.Below(o.max_callees));
        for (uint32_t c = 0; c < callees; ++c) {
          // Without recursion calls go "down" (to later procedures), which keeps the call
          // graph acyclic; with it, any reachable procedure, this one included.
          uint32_t target;
          if (rng.Chance(o.recursion) || q + 1 >= reachable) {
            target = static_cast<uint32_t>(rng.Below(reachable));
          } else {
            target = q + 1 + static_cast<uint32_t>(rng.Below(reachable - q - 1));
          }
          const uint32_t call_flow = add_flow(Kind::kCall, q, target);
          p.AddCallee(Callee{target, call_flow, add_flow(Kind::kReturn, q, target)});
        }
      } else {
        p.edges.push_back(Edge{n, next, add_flow(Kind::kEdge, q, q)});
      }
      if (i + 2 < body.size() && rng.Chance(o.branch)) {
        const uint32_t to = body[i + 2 + rng.Below(body.size() - i - 2)];
        p.edges.push_back(Edge{n, to, add_flow(Kind::kEdge, q, q)});
      }
      if (i > 0 && rng.Chance(o.loop)) {
        p.edges.push_back(Edge{n, body[1 + rng.Below(i)], add_flow(Kind::kEdge, q, q)});
      }
    }
  }
  p.seeds.emplace_back(p.procedures[0].start, kZeroFact);
  for (uint32_t s = 1; s < o.seeds && s < facts; ++s) {
    p.seeds.emplace_back(p.procedures[0].start, static_cast<uint32_t>(1 + rng.Below(facts - 1)));
  }
  std::sort(p.seeds.begin(), p.seeds.end());
  p.seeds.erase(std::unique(p.seeds.begin(), p.seeds.end()), p.seeds.end());
  if (absl::Status s = Validate(p); !s.ok()) return s;
  return p;
}

}  // namespace sluice::ifds
