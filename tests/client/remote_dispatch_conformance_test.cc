// The conformance and kernel suites on RemoteDispatch, against a real sluiced process.
#include "tests/client/conformance_suite.h"
#include "tests/kernels/kernel_suite.h"
#include "tests/testing/remote_cpu_harness.h"

namespace sluice::testing {
namespace {

INSTANTIATE_TYPED_TEST_SUITE_P(RemoteCpu, ConformanceTest, ::testing::Types<RemoteCpuHarness>);
INSTANTIATE_TYPED_TEST_SUITE_P(RemoteCpu, KernelTest, ::testing::Types<RemoteCpuHarness>);

}  // namespace
}  // namespace sluice::testing
