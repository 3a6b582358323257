// The kernel suite on the CPU device.
#include "tests/kernels/kernel_suite.h"
#include "tests/testing/local_cpu_harness.h"

namespace sluice::testing {
namespace {

INSTANTIATE_TYPED_TEST_SUITE_P(Cpu, KernelTest, ::testing::Types<LocalCpuHarness>);

}  // namespace
}  // namespace sluice::testing
