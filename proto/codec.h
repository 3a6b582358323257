// The one translation between the messages of sluice/v1/sluice.proto and the contract's C++
// types (proto/contract.h): statuses, ranges, kernel steps, limits and what GetInfo reports.
// The daemon's session protocol and GetInfo, and the remote client, all translate here.
#ifndef SLUICE_PROTO_CODEC_H_
#define SLUICE_PROTO_CODEC_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/support/status.h"
#include "sluice/proto/contract.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

class KernelCatalog;  // kernels/catalog.h: only the daemon, which reports it, includes it

// ---- Status: the codes are the canonical ones on every side, so they map one to one; a code
// outside the canonical range (a hostile or buggy peer) becomes Unknown.
void ToProto(const absl::Status& status, v1::Status* out);
absl::Status StatusFromProto(const v1::Status& status);
grpc::Status ToGrpc(const absl::Status& status);
absl::Status StatusFromGrpc(const grpc::Status& status);

// ---- Ranges
void ToProto(const RangeRef& range, v1::Range* out);
std::vector<RangeRef> RangesFromProto(const google::protobuf::RepeatedPtrField<v1::Range>& ranges);

// ---- Kernel steps
void ToProto(const StepRef& step, v1::Step* out);
// Borrows kernel names, parameters and handles from `steps`, which must outlive the result.
std::vector<StepRef> StepsFromProto(const google::protobuf::RepeatedPtrField<v1::Step>& steps);

// ---- Limits
void ToProto(const SessionLimits& limits, v1::SessionLimits* out);
// The limits a daemon granted at open, checked as a client must before relying on them:
// Internal for a chunk size outside [kMinChunkSize, kMaxChunkSize] or no bytes per request.
absl::StatusOr<SessionLimits> GrantedLimitsFromProto(const v1::SessionLimits& limits);

// ---- What GetInfo reports
void ToProto(const DeviceInfo& info, const MemoryInfo& memory, const DeviceCounters& counters,
             v1::DeviceInfo* out);
// The catalog's fingerprint and every kernel (bindings, parameters, grid rule, size rules).
void ToProto(const KernelCatalog& catalog, v1::GetInfoResponse* out);

}  // namespace sluice

#endif  // SLUICE_PROTO_CODEC_H_
