// The bounded wait's loop (kernels/cuda_wait.h), driven by a fake query: it keeps polling while
// the work is not ready, returns what the work reported, and gives up at its limit. Runs on any
// machine with the CUDA headers.
#include <chrono>
#include <vector>

#include "gtest/gtest.h"
#include "sluice/kernels/cuda_wait.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;

// Answers NotReady `pending` times, then `last`.
struct FakeQuery {
  int pending;
  cudaError_t last;
  int* calls;
  cudaError_t operator()() const { return ++*calls <= pending ? cudaErrorNotReady : last; }
};

TEST(CudaWaitTest, PollsPastNotReadyUntilTheWorkFinishes) {
  int calls = 0;
  EXPECT_EQ(PollWithin(FakeQuery{5, cudaSuccess, &calls}, milliseconds(60000)), cudaSuccess);
  EXPECT_EQ(calls, 6);
}

TEST(CudaWaitTest, ReturnsTheErrorTheWorkReported) {
  int calls = 0;
  EXPECT_EQ(PollWithin(FakeQuery{2, cudaErrorLaunchFailure, &calls}, milliseconds(60000)),
            cudaErrorLaunchFailure);
  EXPECT_EQ(calls, 3);
}

TEST(CudaWaitTest, GivesUpAtItsLimitWhenTheWorkNeverFinishes) {
  int calls = 0;
  EXPECT_EQ(PollWithin(FakeQuery{1 << 30, cudaSuccess, &calls}, milliseconds(20)),
            cudaErrorTimeout);
  EXPECT_GE(calls, 2);
}

}  // namespace
}  // namespace sluice
