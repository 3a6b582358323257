// Uses an installed Sluice: a device from the factory, LocalDispatch, a kernel, a read into its
// own memory, the IFDS solvers, and (where installed) RemoteDispatch against an address with no
// daemon, beside a header of its own named as one of Sluice's (kernels/grid.h). Prints one line
// and exits 0 when everything behaved.
#include <cstdio>
#include <memory>
#include <vector>

#include "kernels/grid.h"  // the consumer's own, not Sluice's
#include "sluice/client/local_dispatch.h"
#include "sluice/engine/device_factory.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/resident_solver.h"
#include "sluice/ifds/text_format.h"
#ifdef CONSUMER_HAS_REMOTE
#include "sluice/client/remote_dispatch.h"
#endif

namespace {

constexpr char kProblem[] =
    "facts x y\n"
    "procedure main start s exit e\n"
    "nodes main a\n"
    "edge s a {gen x}\n"
    "edge a e {id, x -> y}\n"
    "seed s 0\n";

int Fail(const char* what) {
  std::fprintf(stderr, "consumer: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  absl::StatusOr<std::shared_ptr<sluice::Device>> device = sluice::CreateDevice("cpu", {});
  if (!device.ok()) return Fail("no CPU device");
  absl::StatusOr<std::unique_ptr<sluice::LocalDispatch>> dispatch =
      sluice::LocalDispatch::Create({.device = *device});
  if (!dispatch.ok()) return Fail("no LocalDispatch");
  absl::StatusOr<sluice::Resource> r = (*dispatch)->Allocate(4 * 8);
  if (!r.ok()) return Fail("Allocate failed");
  if (!(*dispatch)->Dispatch({"iota_u32", {5, 1}}, {&*r, 1}, std::nullopt).ok()) {
    return Fail("Dispatch failed");
  }
  absl::StatusOr<std::vector<uint8_t>> tail = (*dispatch)->DownloadRange(*r, 4 * 7, 4);
  if (!tail.ok() || tail->size() != 4 || (*tail)[0] != 12) return Fail("wrong kernel result");
  uint32_t words[2] = {0, 0};
  const absl::Span<uint8_t> into(reinterpret_cast<uint8_t*>(words), sizeof(words));
  if (!(*dispatch)->DownloadRangeIntoSpan(*r, 4, into).ok() || words[0] != 6 || words[1] != 7) {
    return Fail("wrong read into the consumer's memory");
  }
  if (ConsumerGrid{}.cells != 3) return Fail("the consumer's own kernels/grid.h was not its own");

  absl::StatusOr<sluice::ifds::Problem> problem = sluice::ifds::ParseText(kProblem, "p.ifds");
  if (!problem.ok()) return Fail("ParseText failed");
  absl::StatusOr<sluice::ifds::Solution> resident =
      sluice::ifds::SolveResident(**dispatch, *problem);
  if (!resident.ok() || *resident != sluice::ifds::SolveReference(*problem)) {
    return Fail("the resident solver disagrees with the reference");
  }
#ifdef CONSUMER_HAS_REMOTE
  // Port 1 on loopback: nothing listens, so the connection is refused at once.
  absl::StatusOr<std::unique_ptr<sluice::RemoteDispatch>> remote = sluice::RemoteDispatch::Connect(
      {.target = "127.0.0.1:1", .connect_timeout = absl::Seconds(5)});
  if (remote.ok() || remote.status().code() != absl::StatusCode::kUnavailable) {
    return Fail("RemoteDispatch without a daemon is not Unavailable");
  }
#endif
  std::printf("consumer: ok, %zu facts\n", resident->facts.size());
  return 0;
}
