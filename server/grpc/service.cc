#include "sluice/server/grpc/service.h"

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sluice/base/log.h"
#include "sluice/kernels/catalog.h"
#include "sluice/proto/codec.h"
#include "sluice/proto/contract.h"
#include "sluice/server/grpc/session_reactor.h"
#include "sluice/server/ops/session_state.h"

namespace sluice {

namespace {

// A stream refused before anything of it was read or allocated: it ends at once with `status`.
class RefusedStream final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit RefusedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

constexpr std::string_view kBearer = "Bearer ";

}  // namespace

SluiceService::SluiceService(SessionManager* manager, Executor* executor, const Options& options)
    : manager_(manager), executor_(executor), options_(options), watch_(absl::Seconds(1)) {
  watch_.Add(&resumable_);  // frees the sessions whose grace ended
  watch_.Add(&upload_block_expiry_);
}

SluiceService::~SluiceService() {
  watch_.Remove(&upload_block_expiry_);
  watch_.Remove(&resumable_);
}

std::shared_ptr<const TenantTable> SluiceService::tenants() const {
  absl::MutexLock lock(&tenants_mu_);
  return tenants_;
}

void SluiceService::SetTenants(std::shared_ptr<const TenantTable> tenants) {
  {
    absl::MutexLock lock(&tenants_mu_);
    tenants_ = tenants;
  }
  const uint64_t budget = manager_->transfers().limit();
  manager_->Reauthorize(
      [&](const Principal& who) -> std::optional<ClientLimits> {
        if (who.tenant.empty()) return who.limits;  // opened before tenants: kept as it was
        const Tenant* tenant =
            tenants == nullptr ? nullptr : tenants->Accepts(who.tenant, who.credential);
        if (tenant == nullptr) return std::nullopt;
        return TenantTable::LimitsOf(*tenant, budget);
      },
      absl::UnauthenticatedError(
          "the daemon's tenants file, reloaded, no longer lists this session's tenant or the "
          "token it opened with: the session is ended and its buffers freed"));
  // Sessions waiting for their client to resume them go too.
  resumable_.DropRevoked([&](const std::string& owner, const std::string& credential) {
    return !owner.empty() && (tenants == nullptr || tenants->Accepts(owner, credential) == nullptr);
  });
}

absl::StatusOr<std::optional<Principal>> SluiceService::Authenticate(
    const grpc::CallbackServerContext& context) const {
  const std::shared_ptr<const TenantTable> tenants = this->tenants();
  if (tenants == nullptr) return std::nullopt;
  const auto& metadata = context.client_metadata();
  const auto header = metadata.find("authorization");
  if (header == metadata.end()) {
    Refused(context, /*had_token=*/false);
    return absl::UnauthenticatedError(
        "this daemon serves tenants: send your tenant's token (metadata \"authorization: "
        "Bearer <token>\"; the client library's token option, the CLI's --token or "
        "SLUICE_TOKEN)");
  }
  const std::string_view value(header->second.data(), header->second.size());
  const Tenant* tenant = nullptr;
  if (value.substr(0, kBearer.size()) == kBearer) {
    tenant = tenants->Authenticate(value.substr(kBearer.size()));
  }
  if (tenant == nullptr) {
    Refused(context, /*had_token=*/true);
    return absl::UnauthenticatedError(
        "the token is not one of this daemon's tenants' (metadata \"authorization: Bearer "
        "<token>\")");
  }
  return TenantTable::PrincipalOf(*tenant, DigestToken(value.substr(kBearer.size())),
                                  manager_->transfers().limit());
}

void SluiceService::Refused(const grpc::CallbackServerContext& context, bool had_token) const {
  (had_token ? refused_unknown_token_ : refused_without_token_).fetch_add(1);
  // Keyed by the client's host: a host that keeps knocking logs a burst, then a line now and
  // then saying how many went unlogged; other hosts still get theirs.
  const std::string peer = context.peer();
  LogLimited(absl::StrCat("refused ", PeerHost(peer)),
             had_token ? "refused a call: its token is not one of this daemon's tenants'"
                       : "refused a call: it carries no token",
             LogFields{.peer = peer}, LogLevel::kWarning);
}

Principal SluiceService::PeerOf(const grpc::CallbackServerContext& context) const {
  const std::string peer = context.peer();
  std::optional<uint32_t> uid = options_.unix_peers != nullptr
                                    ? options_.unix_peers->UidOf(peer)
                                    : std::nullopt;
  if (!uid.has_value()) uid = LoopbackPeerUid(peer, port_.load());
  return Principal{.key = PeerClientKey(peer, uid)};
}

SluiceService::AuthFailures SluiceService::auth_failures() const {
  return AuthFailures{.no_token = refused_without_token_.load(),
                      .unknown_token = refused_unknown_token_.load()};
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SluiceService::Session(
    grpc::CallbackServerContext* context) {
  absl::StatusOr<std::optional<Principal>> who = Authenticate(*context);
  if (!who.ok()) return new RefusedStream(ToGrpc(who.status()));
  if (!who->has_value()) *who = PeerOf(*context);
  // It counts itself among the unopened streams until it opens a session or ends.
  return new SessionReactor(manager_, executor_, &watch_, &room_watch_, options_.timeouts,
                            &unopened_,
                            &resumable_, options_.metrics, options_.shared_regions,
                            std::move(*who), options_.on_stream_end, context);
}

grpc::ServerUnaryReactor* SluiceService::GetInfo(grpc::CallbackServerContext* context,
                                                 const v1::GetInfoRequest*,
                                                 v1::GetInfoResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<std::optional<Principal>> who = Authenticate(*context);
  if (!who.ok()) {
    reactor->Finish(ToGrpc(who.status()));
    return reactor;
  }
  FillInfo(*manager_, *this, who->has_value() ? &**who : nullptr, response);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

void FillInfo(const SessionManager& manager, const SluiceService& service, const Principal* who,
              v1::GetInfoResponse* info) {
  const Device& device = manager.device();
  const DeviceInfo& d = device.info();
  info->set_server_version(SLUICE_VERSION);
  info->set_backend(d.kind);
  ToProto(d, device.memory(), device.counters(), info->add_devices());
  info->set_active_sessions(manager.active_sessions());
  info->set_sessions_opened(manager.sessions_opened());
  info->set_max_sessions(manager.options().max_sessions);
  info->set_max_sessions_per_client(manager.options().SessionsPerClient());
  info->set_client_memory(manager.options().client_memory);
  info->set_client_transfer_bytes(manager.options().client_transfer_bytes);
  info->set_unopened_streams(service.unopened_streams());
  info->set_max_unopened_streams(service.options().max_unopened_streams);
  info->set_max_queued_requests(StreamBounds::kQueuedRequests);
  info->set_max_queued_bytes(StreamBounds::kQueuedBytes);
  info->set_max_unsent_reply_bytes(StreamBounds::kUnsentReplyBytes);
  info->set_grpc_memory(service.options().grpc_memory);
  info->set_max_unopened_messages(kMaxUnopenedMessages);
  info->set_max_unopened_message_bytes(kMaxUnopenedMessageBytes);
  info->set_max_unopened_ping_payload(kMaxUnopenedPingPayload);
  *info->mutable_host_memory() = service.options().host_memory;
  info->set_resume_grace_ms(
      static_cast<uint64_t>(absl::ToInt64Milliseconds(service.options().resume_grace)));
  info->set_transfer_bytes_in_use(manager.transfers().in_use());
  info->set_transfer_bytes_limit(manager.transfers().limit());
  ToProto(manager.options().limits, info->mutable_default_limits());
  info->set_min_chunk_size(kMinChunkSize);
  info->set_max_chunk_size(manager.options().max_chunk_size);
  ToProto(KernelCatalog::Builtin(), info);
  if (who == nullptr || who->tenant.empty()) return;
  // A tenant sees its own use, and nothing of the others' work.
  info->clear_active_sessions();
  info->clear_sessions_opened();
  info->clear_transfer_bytes_in_use();
  info->clear_unopened_streams();
  for (v1::DeviceInfo& device : *info->mutable_devices()) {
    device.mutable_memory()->clear_used();
    device.mutable_memory()->clear_peak();
    device.mutable_memory()->clear_scratch();
    device.mutable_memory()->clear_host_pinned();
    device.clear_counters();
  }
  const ClientUse use = manager.client_use(who->key, who->limits);
  v1::TenantInfo& tenant = *info->mutable_tenant();
  tenant.set_name(who->tenant);
  tenant.set_sessions(use.sessions);
  tenant.set_max_sessions(use.max_sessions);
  tenant.set_memory_used(use.memory_used);
  tenant.set_memory_limit(use.memory_limit);
  tenant.set_transfer_bytes_in_use(use.transfer_in_use);
  tenant.set_transfer_bytes_limit(use.transfer_limit);
  tenant.set_weight(use.weight);
  tenant.set_device_time_us(static_cast<uint64_t>(absl::ToInt64Microseconds(use.device_time)));
}

}  // namespace sluice
