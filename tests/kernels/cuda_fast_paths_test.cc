// The CUDA device's table of library forms (kernels/cuda_launcher.h): each names a catalog kernel
// at its catalog version, so that a kernel whose behaviour changes loses its fast path instead
// of running an old one. Reads the table only: runs on any machine with the CUDA headers.
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "sluice/kernels/basic.h"
#include "sluice/kernels/catalog.h"
#include "sluice/kernels/cuda_launcher.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

TEST(CudaFastPathsTest, EachNamesACatalogKernelAtItsVersionOnce) {
  std::set<std::string> seen;
  ASSERT_FALSE(CudaFastPaths().empty());
  for (const CudaFastPath& path : CudaFastPaths()) {
    ASSERT_OK_AND_ASSIGN(const KernelSpec* spec, KernelCatalog::Builtin().Find(path.kernel.name));
    EXPECT_EQ(path.kernel.version, spec->version) << path.kernel.name;
    EXPECT_TRUE(seen.insert(std::string(path.kernel.name)).second) << path.kernel.name;
    EXPECT_NE(path.applies, nullptr);
    EXPECT_NE(path.temp_bytes, nullptr);
    EXPECT_NE(path.run, nullptr);
  }
}

TEST(CudaFastPathsTest, AreFoundByNameAndVersionOnly) {
  ASSERT_NE(FindCudaFastPath(kernels::kSortU64Kernel), nullptr);
  EXPECT_EQ(FindCudaFastPath(KernelId{kernels::kSortU64Kernel.name,
                                      kernels::kSortU64Kernel.version + 1}),
            nullptr);
  EXPECT_EQ(FindCudaFastPath(kernels::kFillU32Kernel), nullptr);
}

}  // namespace
}  // namespace sluice
