#include "sluice/server/ops/op_table.h"

namespace sluice {

Job NewJob(SessionState& state, const OpSpec& spec, uint64_t id) {
  Job job;
  job.id = id;
  job.op = spec.op;
  job.accepted = absl::Now();
  job.cheap = spec.cost == OpCost::kInline;
  job.read_only = spec.resume == OpResume::kReread;
  job.open = spec.resume == OpResume::kRunsAgain;
  if (spec.cancel != OpCancel::kNever) job.cancelled = state.NewCancelFlag(id);
  return job;
}

}  // namespace sluice
