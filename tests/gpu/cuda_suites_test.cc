// The conformance and kernel suites on LocalDispatch over the CUDA device (the conformance suite
// also with graph loops off). On a machine without
// a GPU every test skips with the reason; tests/gpu/run.sh runs them where there is one.
#include <cstdint>
#include <memory>
#include <vector>

#include "tests/client/conformance_suite.h"
#include "tests/kernels/kernel_suite.h"
#include "tests/testing/bytes.h"
#include "tests/testing/local_cuda_harness.h"
#include "tests/testing/status_matchers.h"

namespace sluice::testing {
namespace {

INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, ConformanceTest, ::testing::Types<LocalCudaHarness>);
INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, KernelTest, ::testing::Types<LocalCudaHarness>);
// Where graph loops are unavailable repeated groups replay one launch per iteration: the same
// contracts hold (loop guards included).
INSTANTIATE_TYPED_TEST_SUITE_P(CudaReplay, ConformanceTest,
                               ::testing::Types<LocalCudaReplayHarness>);

// What a session makes the device hold besides its buffers shows in the figures, and goes when
// the session does.
TEST(CudaDeviceTest, StagingReadArenasAndCubScratchCountInTheMemoryFigures) {
  LocalCudaHarness harness;
  SLUICE_SKIP_OR_FAIL_WITHOUT_BACKEND(harness);
  const MemoryInfo idle = harness.device()->memory();
  EXPECT_EQ(idle.buffers(), 0u);
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ResidentDispatch> dispatch, harness.NewDispatch());
    const MemoryInfo opened = harness.device()->memory();
    EXPECT_GE(opened.host_pinned, idle.host_pinned + (uint64_t{32} << 20)) << "staging ring";

    constexpr uint32_t kKeys = 5000;
    std::vector<uint64_t> keys(kKeys);
    for (uint32_t i = 0; i < kKeys; ++i) keys[i] = (uint64_t{i} * 2654435761u) % 100003;
    ASSERT_OK_AND_ASSIGN(Resource k, dispatch->Allocate(kKeys * 8));
    ASSERT_OK_AND_ASSIGN(Resource alt, dispatch->Allocate(kKeys * 8));
    ASSERT_OK_AND_ASSIGN(Resource scratch, dispatch->Allocate(256 * 4 * 4));
    ASSERT_OK(dispatch->Upload(k, AsBytes(keys)));
    ASSERT_OK(dispatch->Dispatch(Program{"sort_u64", {kKeys, 64}},
                                 std::vector<Resource>{k, alt, scratch}, std::nullopt));
    ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> sorted, dispatch->DownloadRange(k, 0, 8 * 16));
    const MemoryInfo used = harness.device()->memory();
    EXPECT_GT(used.scratch, opened.scratch) << "CUB's temporary storage";
    EXPECT_GT(used.host_pinned, opened.host_pinned) << "the read arena";
    EXPECT_EQ(used.buffers(), uint64_t{kKeys} * 16 + 256 * 16);
    EXPECT_EQ(used.used, used.buffers() + used.scratch);
  }
  const MemoryInfo closed = harness.device()->memory();
  EXPECT_EQ(closed.scratch, idle.scratch);
  EXPECT_EQ(closed.host_pinned, idle.host_pinned);
  EXPECT_EQ(closed.used, idle.used);
}

}  // namespace
}  // namespace sluice::testing
