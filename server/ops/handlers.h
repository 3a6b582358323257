// The handlers of the operation table (server/ops/op_table.h), one file each under
// server/ops/: each turns a complete request into its job (see OpSpec::accept).
#ifndef SLUICE_SERVER_OPS_HANDLERS_H_
#define SLUICE_SERVER_OPS_HANDLERS_H_

#include "sluice/server/ops/session_state.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

void AcceptOpen(SessionState& state, v1::SessionRequest& request, Job& job);
void AcceptAllocate(SessionState& state, v1::SessionRequest& request, Job& job);
void AcceptRead(SessionState& state, v1::SessionRequest& request, Job& job);
void AcceptFree(SessionState& state, v1::SessionRequest& request, Job& job);
void AcceptExecute(SessionState& state, v1::SessionRequest& request, Job& job);
void AcceptPing(SessionState& state, v1::SessionRequest& request, Job& job);
void AcceptCancel(SessionState& state, v1::SessionRequest& request, Job& job);

}  // namespace sluice

#endif  // SLUICE_SERVER_OPS_HANDLERS_H_
