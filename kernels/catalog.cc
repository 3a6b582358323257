#include "sluice/kernels/catalog.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sluice/kernels/kernel_id.h"
#include "sluice/kernels/specs/families.h"

namespace sluice {
namespace {

using specs::kU32Max;

// Every kernel, family by family, in the order the catalog's fingerprint depends on: the
// general-purpose ones, BFS, the loop guard (which runs no body: the dispatch interface itself
// names it), and the IFDS solver's.
std::vector<KernelSpec> BuiltinKernels() {
  std::vector<KernelSpec> k;
  specs::AddBasicKernels(&k);
  specs::AddBfsKernels(&k);
  k.push_back(KernelSpec{
      .name = kLoopGuardKernelId.name,
      .version = kLoopGuardKernelId.version,
      .summary = "loop guard: as the first repeated step, the repetition ends before an "
                 "iteration that starts with word[index] == 0",
      .bindings = {{"word", 4, Access::kRead, 1, "holds the guard word",
                    {{.params = {0}, .add = 1}}}},
      .params = {{"index", kU32Max, "element of word that must be nonzero to go on"}},
      .passes = {},
      .default_grid = "no threads: the device reads the word before each iteration",
      .loop_guard = true,
  });
  specs::AddIfdsKernels(&k);
  return k;
}

std::string Fingerprint(const std::vector<KernelSpec>& kernels) {
  // FNV-1a over every name, version and pass list: stable across builds and platforms.
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&hash](std::string_view bytes) {
    for (unsigned char c : bytes) {
      hash ^= c;
      hash *= 0x100000001b3ull;
    }
  };
  for (const KernelSpec& spec : kernels) {
    mix(spec.name);
    mix(absl::StrCat(":", spec.version, ":", spec.bindings.size(), ":", spec.params.size(),
                     spec.loop_guard ? ":guard" : ""));
    for (const auto& [first, second] : spec.may_alias) mix(absl::StrCat("=", first, ",", second));
    for (const PassSpec& pass : spec.passes) mix(absl::StrCat(static_cast<int>(pass.body), ","));
    mix(";");
  }
  return absl::StrFormat("%016x", hash);
}

}  // namespace

uint64_t SizeRule::MinElements(const KernelCall& call, absl::Span<const BindingSpec> specs) const {
  constexpr uint64_t kMax = ~uint64_t{0};
  uint64_t sum = 0;
  bool saturated = false;
  const auto accumulate = [&](uint64_t value) {
    if (value > kMax - sum) {
      saturated = true;
    } else {
      sum += value;
    }
  };
  for (int p : params) accumulate(call.params[p]);
  for (int b : bindings) accumulate(call.binding_bytes[b] / specs[b].element_size);
  for (const std::vector<int>& product : products) {
    uint64_t value = 1;
    for (int p : product) {
      const uint64_t factor = call.params[p];
      if (factor != 0 && value > kMax / factor) {
        value = kMax;
        break;
      }
      value *= factor;
    }
    if (value == kMax) {
      saturated = true;
    } else {
      accumulate(value);
    }
  }
  if (saturated) return kMax;
  uint64_t total = 0;
  if (add >= 0) {
    if (static_cast<uint64_t>(add) > kMax - sum) return kMax;
    total = sum + static_cast<uint64_t>(add);
  } else {
    // -(add + 1) + 1 avoids negating INT64_MIN.
    const uint64_t subtract = static_cast<uint64_t>(-(add + 1)) + 1;
    if (sum <= subtract) return 0;
    total = sum - subtract;
  }
  const uint64_t d = divide == 0 ? 1 : divide;
  const uint64_t quotient = total / d + (total % d != 0 ? 1 : 0);
  const uint64_t m = multiply == 0 ? 1 : multiply;
  if (quotient > kMax / m) return kMax;
  return quotient * m;
}

std::string SizeRule::Describe(absl::Span<const BindingSpec> specs,
                               absl::Span<const ParamSpec> param_specs) const {
  std::vector<std::string> terms;
  for (int p : params) terms.emplace_back(param_specs[p].name);
  for (int b : bindings) terms.emplace_back(specs[b].name);
  for (const std::vector<int>& product : products) {
    std::vector<std::string> factors;
    for (int p : product) factors.emplace_back(param_specs[p].name);
    terms.push_back(absl::StrJoin(factors, " * "));
  }
  std::string text = absl::StrJoin(terms, " + ");
  if (add > 0) absl::StrAppend(&text, " + ", add);
  if (add < 0) absl::StrAppend(&text, " - ", static_cast<uint64_t>(-(add + 1)) + 1);
  if (divide > 1) {
    text = terms.size() > 1 || add != 0 ? absl::StrCat("ceil((", text, ") / ", divide, ")")
                                        : absl::StrCat("ceil(", text, " / ", divide, ")");
  }
  if (multiply > 1) text = absl::StrCat(multiply, " * ", text);
  return text;
}

std::string_view AccessName(Access access) {
  switch (access) {
    case Access::kRead:
      return "read";
    case Access::kWrite:
      return "write";
    case Access::kReadWrite:
      return "read_write";
  }
  return "unknown";
}

KernelCatalog::KernelCatalog(std::vector<KernelSpec> kernels)
    : kernels_(std::move(kernels)), fingerprint_(Fingerprint(kernels_)) {}

const KernelCatalog& KernelCatalog::Builtin() {
  static const KernelCatalog* const catalog = new KernelCatalog(BuiltinKernels());
  return *catalog;
}

absl::StatusOr<const KernelSpec*> KernelCatalog::Find(std::string_view name) const {
  for (const KernelSpec& spec : kernels_) {
    if (spec.name == name) return &spec;
  }
  // The name comes from a client: quote it escaped and bounded.
  const absl::string_view shown(name.data(), std::min<size_t>(name.size(), 64));
  return absl::NotFoundError(absl::StrFormat("no kernel named \"%s\"%s in the catalog",
                                             absl::CHexEscape(shown),
                                             name.size() > shown.size() ? "..." : ""));
}

absl::Status KernelCatalog::Validate(const KernelSpec& spec, const KernelCall& call,
                                     const std::optional<Grid>& grid) {
  if (call.binding_bytes.size() != spec.bindings.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: takes %d bindings, got %d", spec.name,
                                                      spec.bindings.size(),
                                                      call.binding_bytes.size()));
  }
  if (call.params.size() != spec.params.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: takes %d parameters, got %d", spec.name, spec.params.size(), call.params.size()));
  }
  for (size_t b = 0; b < spec.bindings.size(); ++b) {
    const BindingSpec& binding = spec.bindings[b];
    const uint64_t elements = call.binding_bytes[b] / binding.element_size;
    if (elements < binding.min_elements) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: binding %d (%s) holds %d elements of %d bytes, needs at least %d", spec.name, b,
          binding.name, elements, binding.element_size, binding.min_elements));
    }
    for (const SizeRule& rule : binding.size_rules) {
      const uint64_t needed = rule.MinElements(call, spec.bindings);
      if (elements < needed) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: binding %d (%s) holds %d elements of %d bytes, needs at least %s = %d",
            spec.name, b, binding.name, elements, binding.element_size,
            rule.Describe(spec.bindings, spec.params), needed));
      }
    }
  }
  if (!call.binding_ids.empty() && call.binding_ids.size() != call.binding_bytes.size()) {
    return absl::InternalError(absl::StrFormat("%s: %d binding ids for %d bindings", spec.name,
                                               call.binding_ids.size(),
                                               call.binding_bytes.size()));
  }
  if (!call.binding_ids.empty()) {
    for (size_t i = 0; i < spec.bindings.size(); ++i) {
      for (size_t j = i + 1; j < spec.bindings.size(); ++j) {
        if (call.binding_ids[i] != call.binding_ids[j]) continue;
        const bool written = spec.bindings[i].access != Access::kRead ||
                             spec.bindings[j].access != Access::kRead;
        const bool allowed = std::any_of(
            spec.may_alias.begin(), spec.may_alias.end(), [&](const std::pair<int, int>& p) {
              return (p.first == static_cast<int>(i) && p.second == static_cast<int>(j)) ||
                     (p.first == static_cast<int>(j) && p.second == static_cast<int>(i));
            });
        if (written && !allowed) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: bindings %d (%s) and %d (%s) are one buffer, which the kernel writes; bind "
              "distinct buffers",
              spec.name, i, spec.bindings[i].name, j, spec.bindings[j].name));
        }
      }
    }
  }
  for (size_t p = 0; p < spec.params.size(); ++p) {
    if (call.params[p] < spec.params[p].min_value) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: parameter %d (%s) = %d is below its minimum %d", spec.name, p,
                          spec.params[p].name, call.params[p], spec.params[p].min_value));
    }
    if (call.params[p] > spec.params[p].max_value) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: parameter %d (%s) = %d exceeds its limit %d", spec.name, p,
                          spec.params[p].name, call.params[p], spec.params[p].max_value));
    }
  }
  for (const PassSpec& pass : spec.passes) {
    const ThreadRule& rule = pass.threads;
    if (rule.kind == ThreadRule::Kind::kParam && call.params[rule.source] > kMaxGridThreads) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: parameter %s asks for more than 2^32 threads", spec.name,
          spec.params[rule.source].name));
    }
    if (rule.kind == ThreadRule::Kind::kCountInBinding &&
        (rule.count_index >= call.binding_bytes[rule.source] / 4 ||
         (rule.base_index >= 0 &&
          static_cast<uint64_t>(rule.base_index) >= call.binding_bytes[rule.source] / 4))) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: count slot %d is outside binding %s", spec.name, rule.count_index,
          spec.bindings[rule.source].name));
    }
  }
  if (grid.has_value()) {
    const bool overridable = std::any_of(spec.passes.begin(), spec.passes.end(),
                                         [](const PassSpec& p) { return p.threads.overridable; });
    if (!overridable) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: its grid is fixed (%s); a grid override is not accepted", spec.name,
          spec.default_grid));
    }
    const uint64_t xy = uint64_t{(*grid)[0]} * (*grid)[1];
    if (xy > kMaxGridThreads || xy * (*grid)[2] > kMaxGridThreads) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: grid %dx%dx%d exceeds 2^32 threads", spec.name, (*grid)[0], (*grid)[1],
          (*grid)[2]));
    }
  }
  if (spec.validate != nullptr) return spec.validate(call);
  return absl::OkStatus();
}

std::vector<PassLaunch> KernelCatalog::Plan(const KernelSpec& spec, const KernelCall& call,
                                            const std::optional<Grid>& grid) {
  std::vector<PassLaunch> passes;
  passes.reserve(spec.passes.size());
  for (const PassSpec& pass : spec.passes) {
    const ThreadRule& rule = pass.threads;
    ThreadCount count{.fixed = 0, .count_binding = -1, .count_index = 0, .divisor = 1, .cap = 0,
                      .base_index = -1};
    const uint64_t divisor = rule.divisor;
    switch (rule.kind) {
      case ThreadRule::Kind::kOne:
        count.fixed = 1;
        break;
      case ThreadRule::Kind::kBindingElements: {
        const uint64_t elements =
            call.binding_bytes[rule.source] / spec.bindings[rule.source].element_size;
        count.fixed = (elements + divisor - 1) / divisor;
        break;
      }
      case ThreadRule::Kind::kParam:
        count.fixed = (call.params[rule.source] + divisor - 1) / divisor;
        break;
      case ThreadRule::Kind::kCountInBinding: {
        count.count_binding = rule.source;
        count.count_index = rule.count_index;
        count.base_index = rule.base_index;
        count.divisor = rule.divisor;
        const uint64_t cap_elements =
            rule.cap_binding < 0
                ? kMaxGridThreads
                : call.binding_bytes[rule.cap_binding] /
                      spec.bindings[rule.cap_binding].element_size;
        count.cap = std::min<uint64_t>((cap_elements + divisor - 1) / divisor, kMaxGridThreads);
        break;
      }
    }
    if (grid.has_value() && rule.overridable) {
      count = ThreadCount{.fixed = uint64_t{(*grid)[0]} * (*grid)[1] * (*grid)[2],
                          .count_binding = -1,
                          .count_index = 0,
                          .divisor = 1,
                          .cap = 0,
                          .base_index = -1};
    }
    const bool overridden = grid.has_value() && rule.overridable;
    passes.push_back(PassLaunch{pass.body, count, (overridden ? 1 : rule.divisor) * pass.cost});
  }
  return passes;
}

}  // namespace sluice
