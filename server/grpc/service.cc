#include "server/grpc/service.h"

#include <algorithm>
#include <string>

#include "kernels/catalog.h"
#include "server/grpc/session_reactor.h"

namespace sluice {

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SluiceService::Session(
    grpc::CallbackServerContext* context) {
  return new SessionReactor(manager_, executor_, context->peer());
}

grpc::ServerUnaryReactor* SluiceService::GetInfo(grpc::CallbackServerContext* context,
                                                 const v1::GetInfoRequest*,
                                                 v1::GetInfoResponse* response) {
  FillInfo(*manager_, response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void FillInfo(const SessionManager& manager, v1::GetInfoResponse* info) {
  const Device& device = manager.device();
  const DeviceInfo& d = device.info();
  info->set_server_version(SLUICE_VERSION);
  info->set_backend(d.kind);
  v1::DeviceInfo& out = *info->add_devices();
  out.set_kind(d.kind);
  out.set_name(d.name);
  out.set_id(d.id);
  out.set_version(d.version);
  out.set_compute_units(d.compute_units);
  const MemoryInfo memory = device.memory();
  out.mutable_memory()->set_total(memory.total);
  out.mutable_memory()->set_used(memory.used);
  out.mutable_memory()->set_peak(memory.peak);
  out.mutable_memory()->set_scratch(memory.scratch);
  out.mutable_memory()->set_host_pinned(memory.host_pinned);
  const DeviceCounters c = device.counters();
  v1::DeviceCounters& counters = *out.mutable_counters();
  counters.set_bytes_uploaded(c.bytes_uploaded);
  counters.set_bytes_downloaded(c.bytes_downloaded);
  counters.set_synchronizations(c.synchronizations);
  counters.set_launches(c.launches);
  counters.set_allocations(c.allocations);
  counters.set_frees(c.frees);

  info->set_active_sessions(manager.active_sessions());
  info->set_sessions_opened(manager.sessions_opened());
  info->set_transfer_bytes_in_use(manager.transfers().in_use());
  info->set_transfer_bytes_limit(manager.transfers().limit());
  const SessionLimits& l = manager.options().limits;
  v1::SessionLimits& limits = *info->mutable_default_limits();
  limits.set_chunk_size(l.default_chunk_size);
  limits.set_memory_quota(l.memory_quota);
  limits.set_max_buffers(l.max_buffers);
  limits.set_max_steps(l.max_steps);
  limits.set_max_ranges(l.max_ranges);
  limits.set_max_request_bytes(l.max_request_bytes);
  limits.set_max_message_bytes(l.max_message_bytes);

  const KernelCatalog& catalog = KernelCatalog::Builtin();
  info->set_catalog_fingerprint(catalog.fingerprint());
  for (const KernelSpec& spec : catalog.kernels()) {
    v1::KernelInfo& k = *info->add_kernels();
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
    }
    for (const ParamSpec& p : spec.params) {
      v1::KernelParam& param = *k.add_params();
      param.set_name(std::string(p.name));
      param.set_max_value(p.max_value);
      param.set_doc(std::string(p.doc));
    }
  }
}

}  // namespace sluice
