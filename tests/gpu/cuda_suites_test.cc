// The conformance and kernel suites on LocalDispatch over the CUDA device (the conformance suite
// also with graph loops off). On a machine without
// a GPU every test skips with the reason; tests/gpu/run.sh runs them where there is one.
#include "tests/client/conformance_suite.h"
#include "tests/kernels/kernel_suite.h"
#include "tests/testing/local_cuda_harness.h"

namespace sluice::testing {
namespace {

INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, ConformanceTest, ::testing::Types<LocalCudaHarness>);
INSTANTIATE_TYPED_TEST_SUITE_P(Cuda, KernelTest, ::testing::Types<LocalCudaHarness>);
// Where graph loops are unavailable repeated groups replay one launch per iteration: the same
// contracts hold (loop guards included).
INSTANTIATE_TYPED_TEST_SUITE_P(CudaReplay, ConformanceTest,
                               ::testing::Types<LocalCudaReplayHarness>);

}  // namespace
}  // namespace sluice::testing
