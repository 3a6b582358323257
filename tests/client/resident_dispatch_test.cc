// The provided (default) methods of ResidentDispatch behave as the seed trait says. A
// dispatcher that implements only the required methods (forwarding to LocalDispatch and
// counting calls) shows which required methods each default uses.
#include "sluice/client/resident_dispatch.h"

#include <array>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"
#include "sluice/kernels/catalog.h"
#include "tests/testing/bytes.h"
#include "tests/testing/status_matchers.h"

namespace sluice {
namespace {

using ::sluice::testing::FromBytes;
using ::sluice::testing::StatusIs;
using ::testing::ElementsAre;
using Code = absl::StatusCode;

class RequiredOnlyDispatch final : public ResidentDispatch {
 public:
  explicit RequiredOnlyDispatch(std::unique_ptr<LocalDispatch> inner) : inner_(std::move(inner)) {}

  std::string_view backend_id() const override { return inner_->backend_id(); }
  // The default ("unversioned") unless a test sets one.
  std::string_view backend_version() const override {
    return version.empty() ? ResidentDispatch::backend_version() : version;
  }
  absl::StatusOr<Resource> Allocate(size_t n) override { return inner_->Allocate(n); }
  absl::Status Upload(const Resource& r, absl::Span<const uint8_t> b) override {
    return inner_->Upload(r, b);
  }
  absl::Status UploadMany(absl::Span<const BufferUpload> uploads) override {
    ++upload_many_calls;
    return inner_->UploadMany(uploads);
  }
  absl::StatusOr<std::vector<uint8_t>> Download(const Resource& r) override {
    return inner_->Download(r);
  }
  absl::Status DownloadInto(const Resource& r, std::vector<uint8_t>* out) override {
    return inner_->DownloadInto(r, out);
  }
  absl::StatusOr<std::vector<uint8_t>> DownloadRange(const Resource& r, size_t o,
                                                     size_t n) override {
    return inner_->DownloadRange(r, o, n);
  }
  absl::Status DownloadRangeInto(const Resource& r, size_t o, size_t n,
                                 std::vector<uint8_t>* out) override {
    ++range_into_calls;
    return inner_->DownloadRangeInto(r, o, n, out);
  }
  absl::Status Free(Resource r) override { return inner_->Free(r); }
  absl::Status Dispatch(const Program& p, absl::Span<const Resource> r,
                        std::optional<Grid> g) override {
    ++dispatch_calls;
    programs.push_back(p);
    return inner_->Dispatch(p, r, g);
  }

  std::string version;
  std::vector<Program> programs;  // every program dispatched, in order
  int upload_many_calls = 0;
  int range_into_calls = 0;
  int dispatch_calls = 0;

 private:
  std::unique_ptr<LocalDispatch> inner_;
};

class ResidentDispatchDefaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<LocalDispatch>> inner = LocalDispatch::CreateCpu();
    ASSERT_TRUE(inner.ok()) << inner.status();
    d_ = std::make_unique<RequiredOnlyDispatch>(std::move(*inner));
  }
  std::unique_ptr<RequiredOnlyDispatch> d_;
};

TEST_F(ResidentDispatchDefaultsTest, BackendVersionDefaultsToUnversioned) {
  EXPECT_EQ(d_->backend_version(), "unversioned");
}

TEST_F(ResidentDispatchDefaultsTest, UploadAtManyForwardsZeroOffsetsToOneUploadMany) {
  ASSERT_OK_AND_ASSIGN(Resource a, d_->Allocate(4));
  ASSERT_OK_AND_ASSIGN(Resource b, d_->Allocate(4));
  const std::vector<uint8_t> x = {1, 2, 3, 4};
  const std::vector<uint8_t> y = {5, 6};
  ASSERT_OK(d_->UploadAtMany({{a, 0, x}, {b, 0, y}}));
  EXPECT_EQ(d_->upload_many_calls, 1);
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> got, d_->Download(b));
  EXPECT_THAT(got, ElementsAre(5, 6, 0, 0));
}

TEST_F(ResidentDispatchDefaultsTest, UploadAtManyRejectsNonzeroOffsetsBeforeWriting) {
  ASSERT_OK_AND_ASSIGN(Resource a, d_->Allocate(4));
  const std::vector<uint8_t> x = {1, 2};
  EXPECT_THAT(d_->UploadAtMany({{a, 0, x}, {a, 2, x}}), StatusIs(Code::kInvalidArgument));
  EXPECT_EQ(d_->upload_many_calls, 0);
  ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> got, d_->Download(a));
  EXPECT_THAT(got, ElementsAre(0, 0, 0, 0));
}

TEST_F(ResidentDispatchDefaultsTest, DownloadRangesIntoLoopsOverRangedReads) {
  ASSERT_OK_AND_ASSIGN(Resource a, d_->Allocate(8));
  ASSERT_OK(d_->Upload(a, std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  std::vector<uint8_t> o1, o2;
  std::vector<std::vector<uint8_t>*> outs = {&o1, &o2};
  ASSERT_OK(d_->DownloadRangesInto({{a, 1, 2}, {a, 6, 2}}, absl::MakeSpan(outs)));
  EXPECT_EQ(d_->range_into_calls, 2);
  EXPECT_THAT(o1, ElementsAre(2, 3));
  EXPECT_THAT(o2, ElementsAre(7, 8));
}

TEST_F(ResidentDispatchDefaultsTest, SpanReadsGoThroughTheVectorFormsAndCopy) {
  ASSERT_OK_AND_ASSIGN(Resource a, d_->Allocate(8));
  ASSERT_OK(d_->Upload(a, std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  uint8_t memory[6] = {0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE};
  const absl::Span<uint8_t> all = absl::MakeSpan(memory);
  const std::vector<absl::Span<uint8_t>> outs = {all.subspan(3, 2), all.subspan(0, 2)};
  ASSERT_OK(d_->DownloadRangesIntoSpans({{a, 1, 2}, {a, 6, 2}}, outs));
  EXPECT_EQ(d_->range_into_calls, 2);
  EXPECT_THAT(memory, ElementsAre(7, 8, 0xEE, 2, 3, 0xEE));
  const Program fill{"fill_u32", {9}};
  const std::vector<Resource> bind = {a};
  ASSERT_OK(d_->DispatchSequenceReadRangesIntoSpans({{&fill, bind, std::nullopt}}, {{a, 4, 1}},
                                                    {all.subspan(2, 1)}));
  EXPECT_EQ(d_->dispatch_calls, 1);
  EXPECT_THAT(memory, ElementsAre(7, 8, 9, 2, 3, 0xEE));
  EXPECT_THAT(d_->DownloadRangesIntoSpans({{a, 0, 2}}, {all.subspan(0, 3)}),
              StatusIs(Code::kInvalidArgument));
  EXPECT_EQ(d_->range_into_calls, 3) << "a refused call reads nothing";
}

TEST_F(ResidentDispatchDefaultsTest, SequenceDispatchesEachStepThenReads) {
  ASSERT_OK_AND_ASSIGN(Resource a, d_->Allocate(8));
  const Program fill{"fill_u32", {3}};
  const Program add{"atomic_add_u32", {1, 5}};
  const std::vector<Resource> bind = {a};
  std::vector<uint8_t> out;
  std::vector<std::vector<uint8_t>*> outs = {&out};
  ASSERT_OK(d_->DispatchSequenceReadRangesInto(
      {{&fill, bind, std::nullopt}, {&add, bind, std::nullopt}}, {{a, 0, 8}},
      absl::MakeSpan(outs)));
  EXPECT_EQ(d_->dispatch_calls, 2);
  EXPECT_EQ(d_->range_into_calls, 1);
  EXPECT_THAT(FromBytes<uint32_t>(out), ElementsAre(3, 8));
}

TEST_F(ResidentDispatchDefaultsTest, RepeatedSequenceLoopsTheGroup) {
  ASSERT_OK_AND_ASSIGN(Resource a, d_->Allocate(4));
  const Program add{"atomic_add_u32", {0, 1}};
  const std::vector<Resource> bind = {a};
  std::vector<uint8_t> out;
  std::vector<std::vector<uint8_t>*> outs = {&out};
  for (uint32_t count : {0u, 1u, 7u}) {
    d_->dispatch_calls = 0;
    ASSERT_OK(d_->DispatchRepeatedSequenceReadRangesInto(
        {{&add, bind, std::nullopt}}, {{&add, bind, std::nullopt}, {&add, bind, std::nullopt}},
        count, {{a, 0, 4}}, absl::MakeSpan(outs)));
    EXPECT_EQ(d_->dispatch_calls, static_cast<int>(1 + 2 * count));
  }
  EXPECT_THAT(FromBytes<uint32_t>(out), ElementsAre(3 + 16));
}

TEST_F(ResidentDispatchDefaultsTest, RepeatedSequenceHonoursALoopGuard) {
  // word[0] is a budget the group spends one by one; word[1] counts the iterations that ran.
  const Program guard{std::string(kLoopGuardKernel), {0}};
  const Program spend{"atomic_add_u32", {0, 0xffffffffu}};
  const Program count_one{"atomic_add_u32", {1, 1}};
  for (const auto& [budget, repeat, left, ran] :
       std::vector<std::array<uint32_t, 4>>{{3, 10, 0, 3}, {3, 2, 1, 2}, {0, 5, 0, 0}}) {
    ASSERT_OK_AND_ASSIGN(Resource word, d_->Allocate(8));
    ASSERT_OK(d_->Upload(word, testing::AsBytes(std::vector<uint32_t>{budget, 0})));
    const std::vector<Resource> bind = {word};
    std::vector<uint8_t> out;
    std::vector<std::vector<uint8_t>*> outs = {&out};
    d_->dispatch_calls = 0;
    ASSERT_OK(d_->DispatchRepeatedSequenceReadRangesInto(
        {}, {{&guard, bind, std::nullopt}, {&spend, bind, std::nullopt},
             {&count_one, bind, std::nullopt}},
        repeat, {{word, 0, 8}}, absl::MakeSpan(outs)));
    EXPECT_THAT(FromBytes<uint32_t>(out), ElementsAre(left, ran));
    EXPECT_EQ(d_->dispatch_calls, static_cast<int>(2 * ran)) << "the guard is never dispatched";
  }
  // Refused before anything runs, as on a Sluice dispatcher: a word index past the end (also
  // with no iterations), a guard in the prefix, a guard after the first repeated step.
  ASSERT_OK_AND_ASSIGN(Resource word, d_->Allocate(8));
  const std::vector<Resource> bind = {word};
  const Program past_end{std::string(kLoopGuardKernel), {2}};
  const Step add{&count_one, bind, std::nullopt};
  d_->dispatch_calls = 0;
  for (uint32_t repeat : {0u, 1u}) {
    EXPECT_THAT(d_->DispatchRepeatedSequenceReadRangesInto({add}, {{&past_end, bind, std::nullopt}},
                                                           repeat, {}, {}),
                StatusIs(Code::kInvalidArgument));
  }
  EXPECT_THAT(d_->DispatchRepeatedSequenceReadRangesInto({{&guard, bind, std::nullopt}}, {add}, 1,
                                                         {}, {}),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(d_->DispatchRepeatedSequenceReadRangesInto({add}, {add, {&guard, bind, std::nullopt}},
                                                         1, {}, {}),
              StatusIs(Code::kInvalidArgument));
  EXPECT_EQ(d_->dispatch_calls, 0) << "nothing ran";
}

TEST_F(ResidentDispatchDefaultsTest, TheResidentSolverRunsOnTheDefaults) {
  // The IFDS solver's windows start with a loop guard: a dispatcher with only the required
  // methods must still solve exactly.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    ifds::GeneratorOptions o;
    o.seed = seed;
    o.procedures = 4 + static_cast<uint32_t>(seed);
    o.facts = 6 + static_cast<uint32_t>(seed);
    ASSERT_OK_AND_ASSIGN(ifds::Problem problem, ifds::Generate(o));
    ifds::ResidentOptions options;
    options.initial_capacity = seed % 2 == 0 ? 4 : 0;
    ASSERT_OK_AND_ASSIGN(ifds::Solution got, ifds::SolveResident(*d_, problem, options));
    EXPECT_EQ(got, ifds::SolveReference(problem)) << "seed " << seed;
  }
}

TEST_F(ResidentDispatchDefaultsTest, TheSolverPinsEveryKernelItUsesAndNotTheCatalog) {
  ifds::GeneratorOptions o;
  o.procedures = 3;
  ASSERT_OK_AND_ASSIGN(ifds::Problem problem, ifds::Generate(o));
  // A backend whose catalog differs as a whole (more kernels, another fingerprint) serves it...
  d_->version = "sluice-cpu/9.9.9 catalog/0123456789abcdef";
  ASSERT_OK_AND_ASSIGN(ifds::Solution got, ifds::SolveResident(*d_, problem));
  EXPECT_EQ(got, ifds::SolveReference(problem));
  // ...because every kernel it runs is asked for by name and version, so that a backend whose
  // version of one of them differs refuses it, naming the kernel (the conformance suite's
  // AProgramRunsOnlyTheKernelVersionItIsPinnedTo).
  ASSERT_FALSE(d_->programs.empty());
  for (const Program& p : d_->programs) {
    ASSERT_OK_AND_ASSIGN(const KernelSpec* spec, KernelCatalog::Builtin().Find(p.kernel));
    EXPECT_EQ(p.version, spec->version) << p.kernel;
  }
}

TEST_F(ResidentDispatchDefaultsTest, NullProgramIsInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(Resource a, d_->Allocate(4));
  const std::vector<Resource> bind = {a};
  EXPECT_THAT(d_->DispatchSequenceReadRangesInto({{nullptr, bind, std::nullopt}}, {}, {}),
              StatusIs(Code::kInvalidArgument));
  EXPECT_EQ(d_->dispatch_calls, 0);
}

}  // namespace
}  // namespace sluice
