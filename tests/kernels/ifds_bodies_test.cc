// The IFDS bodies' encodings and the calls bitmap, checked on their own (the differential tests
// check the solver they make up).
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/bodies/ifds.h"

namespace sluice::kernels::ifds {
namespace {

KernelArgs WithCalls(std::vector<uint32_t>& words) {
  KernelArgs a{};
  a.binding[kCalls] = BindingView{reinterpret_cast<uint8_t*>(words.data()), 4 * words.size()};
  return a;
}

TEST(IfdsBodiesTest, NoKeyOrGroupIsEmptySoZeroedBuffersNeedNoFill) {
  EXPECT_NE(Pack(0, 0, 0), kEmpty);
  EXPECT_NE(PackPe(0, 0, 0), kEmpty);
  EXPECT_NE(Group(0, 0), kEmpty);
  // The tag takes no field's bits.
  const uint64_t key = Pack(kMaxId, 0xffff, 0xfffe);
  EXPECT_EQ(Top(key), kMaxId);
  EXPECT_EQ(Mid(key), 0xffffu);
  EXPECT_EQ(Low(key), 0xfffeu);
  EXPECT_EQ(Top(Pack(0, 0, 0)), 0u);
}

TEST(IfdsBodiesTest, AKeysGroupIsItsTopAndMidAsAGroup) {
  const Graph no_graph{};
  for (int t : {kEs, kSum, kPec}) {
    EXPECT_EQ(GroupOfKey(no_graph, t, Pack(12345, 7, 9)), Group(12345, 7)) << t;
    EXPECT_EQ(GroupOfKey(no_graph, t, Pack(0, 0, 0)), Group(0, 0)) << t;
  }
}

TEST(IfdsBodiesTest, EachCallIsClaimedOnceAndClaimsAreIndependent) {
  constexpr uint32_t kFacts = 40;
  std::vector<uint32_t> words((3 * kFacts + 31) / 32, 0);
  const KernelArgs a = WithCalls(words);
  for (uint32_t e = 0; e < 3; ++e) {
    for (uint32_t d = 0; d < kFacts; ++d) {
      EXPECT_TRUE(ClaimCall(a, kFacts, e, d)) << e << " " << d;
      EXPECT_FALSE(ClaimCall(a, kFacts, e, d)) << e << " " << d;
    }
  }
  for (uint32_t word : words) EXPECT_NE(word, 0u);
}

TEST(IfdsBodiesTest, CallsPastTheBitmapAreMadeEveryTime) {
  constexpr uint32_t kFacts = 40;
  std::vector<uint32_t> words(1, 0);  // bits 0 to 31: edge 0, facts 0 to 31
  const KernelArgs a = WithCalls(words);
  EXPECT_TRUE(ClaimCall(a, kFacts, 0, 31));
  EXPECT_FALSE(ClaimCall(a, kFacts, 0, 31));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(ClaimCall(a, kFacts, 0, 32));
    EXPECT_TRUE(ClaimCall(a, kFacts, 1, 0));
    EXPECT_TRUE(ClaimCall(a, kFacts, kMaxId, 0xffff)) << "no overflow of the bit index";
  }
  std::vector<uint32_t> none;
  const KernelArgs empty = WithCalls(none);
  EXPECT_TRUE(ClaimCall(empty, kFacts, 0, 0));
  EXPECT_TRUE(ClaimCall(empty, kFacts, 0, 0));
}

}  // namespace
}  // namespace sluice::kernels::ifds
