#include "sluice/proto/codec.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_format.h"
#include "sluice/kernels/catalog.h"

namespace sluice {
namespace {

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

absl::Status StatusFromProto(const v1::Status& status) {
  if (status.code() == 0) return absl::OkStatus();
  return absl::Status(CodeFromInt(status.code()), status.message());
}

grpc::Status ToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status StatusFromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(CodeFromInt(static_cast<int>(status.error_code())), status.error_message());
}

void ToProto(const RangeRef& range, v1::Range* out) {
  out->set_handle(range.handle);
  out->set_offset(range.offset);
  out->set_length(range.length);
}

std::vector<RangeRef> RangesFromProto(const google::protobuf::RepeatedPtrField<v1::Range>& ranges) {
  std::vector<RangeRef> out;
  out.reserve(ranges.size());
  for (const v1::Range& r : ranges) out.push_back(RangeRef{r.handle(), r.offset(), r.length()});
  return out;
}

void ToProto(const StepRef& step, v1::Step* out) {
  out->set_kernel(std::string(step.kernel));
  out->set_version(step.version);
  out->mutable_params()->Add(step.params.begin(), step.params.end());
  out->mutable_handles()->Add(step.handles.begin(), step.handles.end());
  if (step.grid.has_value()) {
    out->mutable_grid()->set_x((*step.grid)[0]);
    out->mutable_grid()->set_y((*step.grid)[1]);
    out->mutable_grid()->set_z((*step.grid)[2]);
  }
}

std::vector<StepRef> StepsFromProto(const google::protobuf::RepeatedPtrField<v1::Step>& steps) {
  std::vector<StepRef> out;
  out.reserve(steps.size());
  for (const v1::Step& s : steps) {
    std::optional<Grid> grid;
    if (s.has_grid()) grid = Grid{s.grid().x(), s.grid().y(), s.grid().z()};
    out.push_back(StepRef{s.kernel(), absl::MakeConstSpan(s.params().data(), s.params().size()),
                          absl::MakeConstSpan(s.handles().data(), s.handles().size()), grid,
                          s.version()});
  }
  return out;
}

void ToProto(const SessionLimits& limits, v1::SessionLimits* out) {
  out->set_chunk_size(limits.chunk_size);
  out->set_memory_quota(limits.memory_quota);
  out->set_max_buffers(limits.max_buffers);
  out->set_max_steps(limits.max_steps);
  out->set_max_ranges(limits.max_ranges);
  out->set_max_request_bytes(limits.max_request_bytes);
  out->set_max_message_bytes(limits.max_message_bytes);
  out->set_max_request_seconds(limits.max_request_seconds);
}

absl::StatusOr<SessionLimits> GrantedLimitsFromProto(const v1::SessionLimits& l) {
  if (l.chunk_size() < kMinChunkSize || l.chunk_size() > kMaxChunkSize) {
    return absl::InternalError(absl::StrFormat(
        "sluiced granted a chunk size of %d bytes, outside [%d, %d]", l.chunk_size(),
        kMinChunkSize, kMaxChunkSize));
  }
  if (l.max_request_bytes() == 0) {
    return absl::InternalError("sluiced allows no bytes per request (max_request_bytes 0)");
  }
  return SessionLimits{.chunk_size = l.chunk_size(),
                       .memory_quota = l.memory_quota(),
                       .max_buffers = l.max_buffers(),
                       .max_steps = l.max_steps(),
                       .max_ranges = l.max_ranges(),
                       .max_request_bytes = l.max_request_bytes(),
                       .max_message_bytes = l.max_message_bytes(),
                       .max_request_seconds = l.max_request_seconds()};
}

void ToProto(const DeviceInfo& info, const MemoryInfo& memory, const DeviceCounters& counters,
             v1::DeviceInfo* out) {
  out->set_kind(info.kind);
  out->set_name(info.name);
  out->set_id(info.id);
  out->set_version(info.version);
  out->set_compute_units(info.compute_units);
  v1::MemoryInfo& m = *out->mutable_memory();
  m.set_total(memory.total);
  m.set_used(memory.used);
  m.set_peak(memory.peak);
  m.set_scratch(memory.scratch);
  m.set_host_pinned(memory.host_pinned);
  v1::DeviceCounters& c = *out->mutable_counters();
  c.set_bytes_uploaded(counters.bytes_uploaded);
  c.set_bytes_downloaded(counters.bytes_downloaded);
  c.set_synchronizations(counters.synchronizations);
  c.set_launches(counters.launches);
  c.set_allocations(counters.allocations);
  c.set_frees(counters.frees);
  c.set_failures(counters.failures);
  c.set_resets(counters.resets);
}

void ToProto(const KernelCatalog& catalog, v1::GetInfoResponse* out) {
  out->set_catalog_fingerprint(catalog.fingerprint());
  for (const KernelSpec& spec : catalog.kernels()) {
    v1::KernelInfo& k = *out->add_kernels();
    k.set_name(std::string(spec.name));
    k.set_version(spec.version);
    k.set_summary(std::string(spec.summary));
    k.set_default_grid(std::string(spec.default_grid));
    k.set_accepts_grid_override(std::any_of(spec.passes.begin(), spec.passes.end(),
                                            [](const PassSpec& p) { return p.threads.overridable; }));
    k.set_loop_guard(spec.loop_guard);
    for (const auto& [first, second] : spec.may_alias) {
      k.add_may_alias(static_cast<uint32_t>(first));
      k.add_may_alias(static_cast<uint32_t>(second));
    }
    for (const BindingSpec& b : spec.bindings) {
      v1::KernelBinding& binding = *k.add_bindings();
      binding.set_name(std::string(b.name));
      binding.set_element_size(b.element_size);
      binding.set_access(std::string(AccessName(b.access)));
      binding.set_min_elements(b.min_elements);
      binding.set_doc(std::string(b.doc));
      for (const SizeRule& rule : b.size_rules) {
        v1::SizeRule& r = *binding.add_size_rules();
        for (int p : rule.params) r.add_params(static_cast<uint32_t>(p));
        for (int i : rule.bindings) r.add_bindings(static_cast<uint32_t>(i));
        r.set_add(rule.add);
        r.set_divide(std::max<uint64_t>(rule.divide, 1));
        r.set_multiply(std::max<uint64_t>(rule.multiply, 1));
        for (const std::vector<int>& product : rule.products) {
          v1::SizeRule::Product& out_product = *r.add_products();
          for (int p : product) out_product.add_params(static_cast<uint32_t>(p));
        }
        r.set_text(rule.Describe(spec.bindings, spec.params));
      }
    }
    for (const ParamSpec& p : spec.params) {
      v1::KernelParam& param = *k.add_params();
      param.set_name(std::string(p.name));
      param.set_max_value(p.max_value);
      param.set_min_value(p.min_value);
      param.set_doc(std::string(p.doc));
    }
  }
}

}  // namespace sluice
