#include "sluice/kernels/catalog.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/client/resident_dispatch.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

TEST(KernelCatalogTest, EveryKernelFitsTheLaunchArgumentsAndNamesValidBindings) {
  std::set<std::string> names;
  for (const KernelSpec& spec : KernelCatalog::Builtin().kernels()) {
    EXPECT_TRUE(names.insert(std::string(spec.name)).second) << spec.name;
    EXPECT_LE(spec.bindings.size(), static_cast<size_t>(kMaxBindings)) << spec.name;
    EXPECT_LE(spec.params.size(), static_cast<size_t>(kMaxParams)) << spec.name;
    // Loop guards run no passes (the device reads their word); every other kernel runs some.
    EXPECT_EQ(spec.passes.empty(), spec.loop_guard) << spec.name;
    if (spec.loop_guard) {
      ASSERT_EQ(spec.bindings.size(), 1u) << spec.name;
      EXPECT_EQ(spec.bindings[0].element_size, 4u) << spec.name;
      EXPECT_EQ(spec.params.size(), 1u) << spec.name;
    }
    EXPECT_GE(spec.version, 1u) << spec.name;
    for (const BindingSpec& b : spec.bindings) EXPECT_GT(b.element_size, 0u) << spec.name;
    for (const PassSpec& pass : spec.passes) {
      const ThreadRule& rule = pass.threads;
      EXPECT_GE(rule.divisor, 1u) << spec.name;
      EXPECT_LT(static_cast<size_t>(pass.body), static_cast<size_t>(BodyId::kNumBodies));
      if (rule.kind == ThreadRule::Kind::kBindingElements ||
          rule.kind == ThreadRule::Kind::kCountInBinding) {
        EXPECT_LT(static_cast<size_t>(rule.source), spec.bindings.size()) << spec.name;
      }
      if (rule.kind == ThreadRule::Kind::kParam) {
        EXPECT_LT(static_cast<size_t>(rule.source), spec.params.size()) << spec.name;
      }
      if (rule.cap_binding >= 0) {
        EXPECT_LT(static_cast<size_t>(rule.cap_binding), spec.bindings.size()) << spec.name;
      }
    }
  }
}

TEST(KernelCatalogTest, TheClientsLoopGuardNameIsTheCatalogsGuard) {
  ASSERT_OK_AND_ASSIGN(const KernelSpec* spec, KernelCatalog::Builtin().Find(kLoopGuardKernel));
  EXPECT_TRUE(spec->loop_guard);
}

TEST(KernelCatalogTest, FindsKernelsByNameAndRejectsUnknownOnes) {
  ASSERT_OK_AND_ASSIGN(const KernelSpec* spec, KernelCatalog::Builtin().Find("fill_u32"));
  EXPECT_EQ(spec->name, "fill_u32");
  EXPECT_THAT(KernelCatalog::Builtin().Find("fill"), StatusIs(Code::kNotFound));
  EXPECT_THAT(KernelCatalog::Builtin().Find(std::string(1000, '\0')), StatusIs(Code::kNotFound));
}

TEST(KernelCatalogTest, FingerprintIsSixteenHexDigits) {
  const std::string& fp = KernelCatalog::Builtin().fingerprint();
  ASSERT_EQ(fp.size(), 16u);
  EXPECT_EQ(fp.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(KernelCatalogTest, ValidateChecksCountsSizesParametersAndGrids) {
  ASSERT_OK_AND_ASSIGN(const KernelSpec* fill, KernelCatalog::Builtin().Find("fill_u32"));
  const std::vector<uint64_t> sixteen = {16};
  const std::vector<uint64_t> value = {1};
  EXPECT_OK(KernelCatalog::Validate(*fill, {sixteen, value}, std::nullopt));
  EXPECT_THAT(KernelCatalog::Validate(*fill, {{}, value}, std::nullopt),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(KernelCatalog::Validate(*fill, {sixteen, {}}, std::nullopt),
              StatusIs(Code::kInvalidArgument));
  const std::vector<uint64_t> too_big = {uint64_t{1} << 32};
  EXPECT_THAT(KernelCatalog::Validate(*fill, {sixteen, too_big}, std::nullopt),
              StatusIs(Code::kInvalidArgument));
  EXPECT_OK(KernelCatalog::Validate(*fill, {sixteen, value}, Grid{65536, 65536, 1}));
  EXPECT_THAT(KernelCatalog::Validate(*fill, {sixteen, value}, Grid{65536, 65536, 2}),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(KernelCatalog::Validate(*fill, {sixteen, value}, Grid{~0u, ~0u, ~0u}),
              StatusIs(Code::kInvalidArgument));
}

// The results kernels' window: rows of at least a word, marks that hold every row, and a
// count per block of 2048 marks words plus one for the total.
TEST(KernelCatalogTest, TheResultsKernelsRefuseAWindowTheirBuffersDoNotHold) {
  for (std::string_view name : {"ifds_results", "ifds_results_list"}) {
    ASSERT_OK_AND_ASSIGN(const KernelSpec* spec, KernelCatalog::Builtin().Find(name));
    const bool marks_first = name == "ifds_results_list";
    // 100 nodes of 3 words: 300 words, one block.
    const auto bytes = [&](uint64_t marks, uint64_t counts) {
      return marks_first ? std::vector<uint64_t>{4 * marks, 4 * counts, 8}
                         : std::vector<uint64_t>{8, 8, 8, 8, 8, 8, 8, 8, 4 * marks, 4 * counts, 8};
    };
    const std::vector<uint64_t> window = {7, 100, 3};
    EXPECT_OK(KernelCatalog::Validate(*spec, {bytes(300, 2), window}, std::nullopt)) << name;
    EXPECT_THAT(KernelCatalog::Validate(*spec, {bytes(299, 2), window}, std::nullopt),
                StatusIs(Code::kInvalidArgument,
                         HasSubstr("(marks) holds 299 elements of 4 bytes, needs at least "
                                   "nodes * words_per_node = 300")))
        << name;
    EXPECT_THAT(KernelCatalog::Validate(*spec, {bytes(300, 1), window}, std::nullopt),
                StatusIs(Code::kInvalidArgument,
                         HasSubstr("(counts) holds 1 elements of 4 bytes, needs at least "
                                   "ceil((nodes * words_per_node + 2048) / 2048) = 2")))
        << name;
    const std::vector<uint64_t> no_row = {7, 100, 0};
    EXPECT_THAT(KernelCatalog::Validate(*spec, {bytes(300, 2), no_row}, std::nullopt),
                StatusIs(Code::kInvalidArgument,
                         HasSubstr("parameter 2 (words_per_node) = 0 is below its minimum 1")))
        << name;
    // The largest window the parameters allow needs more words than any buffer holds.
    const std::vector<uint64_t> huge = {0, 0xffffffffu, 2048};
    EXPECT_THAT(KernelCatalog::Validate(*spec, {bytes(300, 2), huge}, std::nullopt),
                StatusIs(Code::kInvalidArgument))
        << name;
  }
}

TEST(KernelCatalogTest, PlanFollowsTheGridRules) {
  ASSERT_OK_AND_ASSIGN(const KernelSpec* scan, KernelCatalog::Builtin().Find("exclusive_scan_u32"));
  const std::vector<uint64_t> bytes = {4 * 5000, 4 * 5000, 4, 4 * 3};
  const std::vector<PassLaunch> passes = KernelCatalog::Plan(*scan, {bytes, {}}, std::nullopt);
  ASSERT_EQ(passes.size(), 3u);
  EXPECT_EQ(passes[0].threads.fixed, 3u);
  EXPECT_EQ(passes[1].threads.fixed, 1u);
  EXPECT_EQ(passes[2].threads.fixed, 3u);

  ASSERT_OK_AND_ASSIGN(const KernelSpec* expand, KernelCatalog::Builtin().Find("bfs_expand"));
  const std::vector<uint64_t> graph = {4 * 11, 40, 4, 40, 4 * 7, 40, 16};
  const std::vector<PassLaunch> bfs = KernelCatalog::Plan(*expand, {graph, {}}, std::nullopt);
  ASSERT_EQ(bfs.size(), 1u);
  EXPECT_EQ(bfs[0].threads.count_binding, 6);
  EXPECT_EQ(bfs[0].threads.cap, 7u);

  ASSERT_OK_AND_ASSIGN(const KernelSpec* fill, KernelCatalog::Builtin().Find("fill_u32"));
  const std::vector<uint64_t> sixteen = {16};
  const std::vector<uint64_t> value = {1};
  EXPECT_EQ(KernelCatalog::Plan(*fill, {sixteen, value}, Grid{2, 3, 4})[0].threads.fixed, 24u);
}

TEST(KernelCatalogTest, SizeRulesNameValidParametersAndBindings) {
  for (const KernelSpec& spec : KernelCatalog::Builtin().kernels()) {
    for (const BindingSpec& b : spec.bindings) {
      for (const SizeRule& rule : b.size_rules) {
        EXPECT_FALSE(rule.params.empty() && rule.bindings.empty() && rule.products.empty())
            << spec.name << " " << b.name;
        for (const std::vector<int>& product : rule.products) {
          EXPECT_FALSE(product.empty());
          for (int p : product) EXPECT_LT(static_cast<size_t>(p), spec.params.size());
        }
        for (int p : rule.params) EXPECT_LT(static_cast<size_t>(p), spec.params.size());
        for (int i : rule.bindings) EXPECT_LT(static_cast<size_t>(i), spec.bindings.size());
        EXPECT_GE(rule.divide, 1u);
        EXPECT_GE(rule.multiply, 1u);
      }
    }
  }
}

// The rule a binding publishes, in words, for kernel `kernel` binding `binding`.
std::string RuleText(std::string_view kernel, size_t binding) {
  const KernelSpec* spec = *KernelCatalog::Builtin().Find(kernel);
  const BindingSpec& b = spec->bindings.at(binding);
  EXPECT_EQ(b.size_rules.size(), 1u) << kernel << " " << b.name;
  return b.size_rules.empty() ? "" : b.size_rules[0].Describe(spec->bindings, spec->params);
}

TEST(KernelCatalogTest, SizeRulesSayWhatEachBindingNeeds) {
  EXPECT_EQ(RuleText("copy_range_u32", 0), "src_offset + count");
  EXPECT_EQ(RuleText("atomic_add_u32", 0), "index + 1");
  EXPECT_EQ(RuleText("exclusive_scan_u32", 3), "ceil(in / 2048)");
  EXPECT_EQ(RuleText("sort_u64", 2), "256 * ceil(count / 2048)");
  EXPECT_EQ(RuleText("bfs_expand", 2), "ceil((row_offsets - 1) / 32)");
  EXPECT_EQ(RuleText("repeat_while_u32", 0), "index + 1");
  EXPECT_EQ(RuleText("ifds_results_list", 0), "nodes * words_per_node");
  EXPECT_EQ(RuleText("ifds_results_list", 1), "ceil((nodes * words_per_node + 2048) / 2048)");
}

TEST(KernelCatalogTest, ACallIsRefusedExactlyBelowWhatASizeRuleNeeds) {
  ASSERT_OK_AND_ASSIGN(const KernelSpec* sort, KernelCatalog::Builtin().Find("sort_u64"));
  // 5000 keys: keys and alt need 5000 elements, scratch 256 * ceil(5000 / 2048) = 768.
  const std::vector<uint64_t> params = {5000, 64};
  const std::vector<uint64_t> enough = {8 * 5000, 8 * 5000, 4 * 768};
  EXPECT_OK(KernelCatalog::Validate(*sort, {enough, params}, std::nullopt));
  const std::vector<uint64_t> short_scratch = {8 * 5000, 8 * 5000, 4 * 767 + 3};
  EXPECT_THAT(KernelCatalog::Validate(*sort, {short_scratch, params}, std::nullopt),
              StatusIs(Code::kInvalidArgument,
                       ::testing::HasSubstr("needs at least 256 * ceil(count / 2048) = 768")));
  const std::vector<uint64_t> short_alt = {8 * 5000, 8 * 4999, 4 * 768};
  EXPECT_THAT(KernelCatalog::Validate(*sort, {short_alt, params}, std::nullopt),
              StatusIs(Code::kInvalidArgument, ::testing::HasSubstr("binding 1 (alt)")));

  ASSERT_OK_AND_ASSIGN(const KernelSpec* copy, KernelCatalog::Builtin().Find("copy_range_u32"));
  const std::vector<uint64_t> ten = {40, 40};
  EXPECT_OK(KernelCatalog::Validate(*copy, {ten, std::vector<uint64_t>{6, 0, 4}}, std::nullopt));
  EXPECT_THAT(
      KernelCatalog::Validate(*copy, {ten, std::vector<uint64_t>{7, 0, 4}}, std::nullopt),
      StatusIs(Code::kInvalidArgument));
  // Sums that would wrap 64 bits need more than any buffer holds.
  const uint64_t kMax = ~uint64_t{0};
  EXPECT_THAT(KernelCatalog::Validate(*copy, {ten, std::vector<uint64_t>{kMax, 0, 2}},
                                      std::nullopt),
              StatusIs(Code::kInvalidArgument));

  ASSERT_OK_AND_ASSIGN(const KernelSpec* expand, KernelCatalog::Builtin().Find("bfs_expand"));
  // 65 nodes (66 row offsets): visited needs ceil(65 / 32) = 3 words, levels 65 elements.
  std::vector<uint64_t> graph = {4 * 66, 40, 4 * 3, 4 * 65, 4, 4, 16};
  EXPECT_OK(KernelCatalog::Validate(*expand, {graph, {}}, std::nullopt));
  graph[2] = 4 * 2;
  EXPECT_THAT(KernelCatalog::Validate(*expand, {graph, {}}, std::nullopt),
              StatusIs(Code::kInvalidArgument, ::testing::HasSubstr("visited")));
}

}  // namespace
}  // namespace sluice
