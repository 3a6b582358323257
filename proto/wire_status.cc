#include "proto/wire_status.h"

#include <string>

namespace sluice {
namespace {

// Codes outside the canonical range (a hostile or buggy peer) become Unknown.
absl::StatusCode CodeFromInt(int code) {
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::StatusCode::kUnknown;
  }
  return static_cast<absl::StatusCode>(code);
}

}  // namespace

void ToProto(const absl::Status& status, v1::Status* out) {
  out->set_code(static_cast<int>(status.code()));
  out->set_message(std::string(status.message()));
}

absl::Status FromProto(const v1::Status& status) {
  if (status.code() == 0) return absl::OkStatus();
  return absl::Status(CodeFromInt(status.code()), status.message());
}

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(CodeFromInt(static_cast<int>(status.error_code())), status.error_message());
}

}  // namespace sluice
