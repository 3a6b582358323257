// The conformance suite on LocalDispatch over the CPU device.
#include "tests/client/conformance_suite.h"
#include "tests/testing/local_cpu_harness.h"

namespace sluice::testing {
namespace {

INSTANTIATE_TYPED_TEST_SUITE_P(LocalCpu, ConformanceTest, ::testing::Types<LocalCpuHarness>);

}  // namespace
}  // namespace sluice::testing
