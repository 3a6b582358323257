// What GetInfo publishes of each kernel's binding sizes is what the catalog enforces, for every
// kernel: buffers sized from the published form alone (min_elements, the size rules evaluated
// as sluice.proto defines them, the parameters' bounds), as a client in any language would size
// them, are accepted, with or without trailing bytes short of an element; one element less in
// any binding, or a parameter below its minimum, is INVALID_ARGUMENT naming it.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/kernels/catalog.h"
#include "sluice/proto/codec.h"
#include "sluice/v1/sluice.pb.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;
constexpr uint64_t kMax = ~uint64_t{0};

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return b > kMax - a ? kMax : a + b; }
uint64_t SaturatingMul(uint64_t a, uint64_t b) { return a != 0 && b > kMax / a ? kMax : a * b; }

// A rule evaluated from its published fields alone (sluice.proto's SizeRule).
uint64_t Evaluate(const v1::SizeRule& rule, const std::vector<uint64_t>& params,
                  const std::vector<uint64_t>& elements) {
  uint64_t sum = 0;
  for (uint32_t p : rule.params()) sum = SaturatingAdd(sum, params.at(p));
  for (uint32_t b : rule.bindings()) sum = SaturatingAdd(sum, elements.at(b));
  for (const v1::SizeRule::Product& product : rule.products()) {
    uint64_t value = 1;
    for (uint32_t p : product.params()) value = SaturatingMul(value, params.at(p));
    sum = SaturatingAdd(sum, value);
  }
  if (rule.add() >= 0) {
    sum = SaturatingAdd(sum, static_cast<uint64_t>(rule.add()));
  } else {
    const uint64_t subtract = static_cast<uint64_t>(-(rule.add() + 1)) + 1;
    sum = sum <= subtract ? 0 : sum - subtract;
  }
  if (sum == kMax) return kMax;
  const uint64_t quotient = sum / rule.divide() + (sum % rule.divide() != 0 ? 1 : 0);
  return SaturatingMul(quotient, rule.multiply());
}

// Each binding's least element count for `params`: min_elements, raised by its rules until
// none raises any (rules may name other bindings' counts); binding `fixed`, if any, holds
// `count` elements whatever its rules say.
std::vector<uint64_t> Minimum(const v1::KernelInfo& kernel, const std::vector<uint64_t>& params,
                              int fixed = -1, uint64_t count = 0) {
  std::vector<uint64_t> elements;
  for (const v1::KernelBinding& b : kernel.bindings()) elements.push_back(b.min_elements());
  if (fixed >= 0) elements[fixed] = count;
  for (bool changed = true; changed;) {
    changed = false;
    for (int b = 0; b < kernel.bindings_size(); ++b) {
      if (b == fixed) continue;
      for (const v1::SizeRule& rule : kernel.bindings(b).size_rules()) {
        const uint64_t needed = Evaluate(rule, params, elements);
        if (needed > elements[b]) {
          elements[b] = needed;
          changed = true;
        }
      }
    }
  }
  return elements;
}

TEST(PublishedSizeRulesTest, BuffersSizedFromGetInfoAloneAreAcceptedAndOneElementLessIsNot) {
  v1::GetInfoResponse info;
  ToProto(KernelCatalog::Builtin(), &info);
  ASSERT_EQ(info.kernels_size(), static_cast<int>(KernelCatalog::Builtin().kernels().size()));
  std::mt19937_64 rng(20261204);
  int calls = 0;
  for (const v1::KernelInfo& kernel : info.kernels()) {
    ASSERT_OK_AND_ASSIGN(const KernelSpec* spec, KernelCatalog::Builtin().Find(kernel.name()));
    // The least parameters, the largest a small buffer allows, and seeded ones between.
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<uint64_t> params;
      for (const v1::KernelParam& p : kernel.params()) {
        const uint64_t hi = std::min(p.max_value(), p.min_value() + 5000);
        params.push_back(trial == 0 ? p.min_value()
                                    : std::uniform_int_distribution<uint64_t>(p.min_value(),
                                                                              hi)(rng));
      }
      const std::vector<uint64_t> elements = Minimum(kernel, params);
      std::vector<uint64_t> bytes;
      for (int b = 0; b < kernel.bindings_size(); ++b) {
        ASSERT_LT(elements[b], uint64_t{1} << 32) << kernel.name() << " " << b;
        bytes.push_back(elements[b] * kernel.bindings(b).element_size());
      }
      const std::string what = absl::StrCat(kernel.name(), " trial ", trial);
      EXPECT_OK(KernelCatalog::Validate(*spec, {bytes, params}, std::nullopt)) << what;
      // Bytes short of a whole element do not count, and do not hurt.
      std::vector<uint64_t> ragged = bytes;
      for (int b = 0; b < kernel.bindings_size(); ++b) {
        ragged[b] += kernel.bindings(b).element_size() - 1;
      }
      EXPECT_OK(KernelCatalog::Validate(*spec, {ragged, params}, std::nullopt)) << what;
      for (int b = 0; b < kernel.bindings_size(); ++b) {
        if (elements[b] == 0) continue;
        std::vector<uint64_t> short_one = ragged;
        short_one[b] -= kernel.bindings(b).element_size();  // one element less, ragged still
        EXPECT_THAT(KernelCatalog::Validate(*spec, {short_one, params}, std::nullopt),
                    StatusIs(Code::kInvalidArgument,
                             HasSubstr(absl::StrCat("binding ", b, " (",
                                                    kernel.bindings(b).name(), ")"))))
            << what;
        ++calls;
      }
      for (int p = 0; p < kernel.params_size(); ++p) {
        if (kernel.params(p).min_value() == 0) continue;
        std::vector<uint64_t> low = params;
        low[p] = kernel.params(p).min_value() - 1;
        EXPECT_THAT(KernelCatalog::Validate(*spec, {bytes, low}, std::nullopt),
                    StatusIs(Code::kInvalidArgument,
                             HasSubstr(absl::StrCat("parameter ", p, " (",
                                                    kernel.params(p).name(), ")"))))
            << what;
      }
    }
  }
  EXPECT_GT(calls, 500) << "every kernel's bindings were tried";
}

// Beyond the rules, the catalog bounds a few bindings from above (an IFDS table's segment: fewer
// than 2^29 slots): each such binding's published doc states its bound, in "fewer than" or "at
// most", and any other binding takes a buffer of any size.
TEST(PublishedSizeRulesTest, ABindingRefusedForItsSizeAloneStatesItsBound) {
  v1::GetInfoResponse info;
  ToProto(KernelCatalog::Builtin(), &info);
  int bounded = 0;
  for (const v1::KernelInfo& kernel : info.kernels()) {
    ASSERT_OK_AND_ASSIGN(const KernelSpec* spec, KernelCatalog::Builtin().Find(kernel.name()));
    std::vector<uint64_t> params;
    for (const v1::KernelParam& p : kernel.params()) params.push_back(p.min_value());
    const std::vector<uint64_t> elements = Minimum(kernel, params);
    std::vector<uint64_t> bytes;
    for (int b = 0; b < kernel.bindings_size(); ++b) {
      bytes.push_back(elements[b] * kernel.bindings(b).element_size());
    }
    ASSERT_OK(KernelCatalog::Validate(*spec, {bytes, params}, std::nullopt)) << kernel.name();
    for (int b = 0; b < kernel.bindings_size(); ++b) {
      // 2^40 elements, past any bound; the others as that needs.
      const std::vector<uint64_t> with = Minimum(kernel, params, b, uint64_t{1} << 40);
      std::vector<uint64_t> huge;
      for (int c = 0; c < kernel.bindings_size(); ++c) {
        huge.push_back(SaturatingMul(with[c], kernel.bindings(c).element_size()));
      }
      const absl::Status status = KernelCatalog::Validate(*spec, {huge, params}, std::nullopt);
      const std::string& doc = kernel.bindings(b).doc();
      const bool states = doc.find("fewer than") != std::string::npos ||
                          doc.find("at most") != std::string::npos;
      EXPECT_EQ(status.ok(), !states)
          << kernel.name() << " binding " << b << " (" << kernel.bindings(b).name()
          << "): " << status << "; its doc: " << doc;
      bounded += states ? 1 : 0;
    }
  }
  EXPECT_GT(bounded, 40) << "the IFDS tables' segments";
}

}  // namespace
}  // namespace sluice
