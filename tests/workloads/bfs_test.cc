#include "sluice/workloads/bfs.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/engine/device.h"
#include "sluice/kernels/bfs.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::StatusIs;

class BfsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(dispatch_, LocalDispatch::CreateCpu()); }
  std::unique_ptr<LocalDispatch> dispatch_;
};

TEST_F(BfsTest, RepeatedWindowsEqualHostBfsOnGeneratedGraphs) {
  struct Shape {
    uint32_t nodes, degree, window;
  };
  for (const Shape& shape : {Shape{1, 0, 1}, Shape{2, 1, 1}, Shape{100, 1, 3},
                             Shape{1000, 2, 8}, Shape{5000, 4, 5}, Shape{200000, 6, 16}}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      ASSERT_OK_AND_ASSIGN(const CsrGraph graph, GenerateGraph(shape.nodes, shape.degree, seed));
      const uint32_t source = static_cast<uint32_t>(seed * 7919 % shape.nodes);
      ASSERT_OK_AND_ASSIGN(BfsResult result,
                           ResidentBfs(*dispatch_, graph, source, shape.window));
      EXPECT_EQ(result.levels, HostBfs(graph, source))
          << shape.nodes << " nodes, seed " << seed;
    }
  }
  EXPECT_EQ(dispatch_->device().memory().used, 0u) << "every buffer is freed";
}

TEST_F(BfsTest, WindowsArePolledWithOneSynchronizationAndSixteenBytesEach) {
  // A path 0 -> 1 -> ... -> 99: 100 levels, so 13 windows of 8 iterations.
  CsrGraph path;
  path.nodes = 100;
  for (uint32_t u = 0; u < 100; ++u) {
    path.row_offsets.push_back(u);
    if (u + 1 < 100) path.columns.push_back(u + 1);
  }
  path.row_offsets.push_back(99);
  const DeviceCounters before = dispatch_->device().counters();
  ASSERT_OK_AND_ASSIGN(BfsResult result, ResidentBfs(*dispatch_, path, 0, 8));
  const DeviceCounters after = dispatch_->device().counters();
  EXPECT_EQ(result.depth, 100u);
  EXPECT_EQ(result.windows, 13u);
  // Upload batch, fill, ranged upload, one per window, final download.
  EXPECT_EQ(after.synchronizations - before.synchronizations, 3u + 13u + 1u);
  EXPECT_EQ(after.bytes_downloaded - before.bytes_downloaded, 13u * 16u + 400u);
}

TEST_F(BfsTest, BadArgumentsAreInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(const CsrGraph graph, GenerateGraph(10, 2, 1));
  EXPECT_THAT(ResidentBfs(*dispatch_, graph, 10, 4), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ResidentBfs(*dispatch_, graph, 0, 0), StatusIs(absl::StatusCode::kInvalidArgument));
  CsrGraph broken = graph;
  broken.row_offsets.pop_back();
  EXPECT_THAT(ResidentBfs(*dispatch_, broken, 0, 4), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(GenerateGraphTest, SizesPastTheEdgeBoundAreInvalidArgument) {
  EXPECT_THAT(GenerateGraph(0xffffffffu, 0xffffffffu, 1),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(GenerateGraph(1u << 20, 1u << 10, 1), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK_AND_ASSIGN(const CsrGraph graph, GenerateGraph(1u << 20, 0, 1));
  EXPECT_TRUE(graph.columns.empty());
  // Without edges the node bound holds alone (4G nodes asked for 86 GB before).
  EXPECT_THAT(GenerateGraph(0xffffffffu, 0, 1), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(GenerateGraph(kMaxGeneratedNodes + 1, 0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// A window longer than a graph has levels runs as many iterations as it has nodes and one
// more, not the 2^32 - 1 asked for (about 20 minutes on 1,000 nodes before).
TEST_F(BfsTest, AWindowLongerThanTheGraphHasLevelsEndsWithTheGraph) {
  ASSERT_OK_AND_ASSIGN(const CsrGraph graph, GenerateGraph(1000, 2, 5));
  const DeviceCounters before = dispatch_->device().counters();
  ASSERT_OK_AND_ASSIGN(BfsResult result, ResidentBfs(*dispatch_, graph, 0, 0xffffffffu));
  const DeviceCounters after = dispatch_->device().counters();
  EXPECT_EQ(result.levels, HostBfs(graph, 0));
  EXPECT_EQ(result.windows, 1u);
  // Three passes an iteration (bfs_expand two, bfs_advance one), and a few to set up.
  EXPECT_LE(after.launches - before.launches, 3u * 1001u + 8u);
}

TEST_F(BfsTest, CorruptGraphDataIsReportedNotTrusted) {
  ASSERT_OK_AND_ASSIGN(CsrGraph graph, GenerateGraph(50, 3, 2));
  graph.columns[0] = 1000000;  // an edge to a node that does not exist
  graph.row_offsets[0] = 0;
  EXPECT_THAT(ResidentBfs(*dispatch_, graph, 0, 4), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_EQ(dispatch_->device().memory().used, 0u);
}

}  // namespace
}  // namespace sluice
