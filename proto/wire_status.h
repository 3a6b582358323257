// Conversions between absl::Status and the wire's sluice.v1.Status / grpc::Status. The codes
// are the canonical ones on both sides, so they map one to one.
#ifndef SLUICE_PROTO_WIRE_STATUS_H_
#define SLUICE_PROTO_WIRE_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"
#include "sluice/v1/sluice.pb.h"

namespace sluice {

void ToProto(const absl::Status& status, v1::Status* out);
absl::Status FromProto(const v1::Status& status);
grpc::Status ToGrpc(const absl::Status& status);
absl::Status FromGrpc(const grpc::Status& status);

}  // namespace sluice

#endif  // SLUICE_PROTO_WIRE_STATUS_H_
