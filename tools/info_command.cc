// sluice info --server HOST:PORT: what a daemon serves.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sluice/tools/cli.h"
#if SLUICE_WITH_GRPC
#include "sluice/client/server_info.h"
#endif

namespace sluice {

int RunInfo() {
#if SLUICE_WITH_GRPC
  const std::string server = absl::GetFlag(FLAGS_server);
  if (server.empty()) {
    std::fprintf(stderr, "sluice info: --server HOST:PORT is required\n");
    return kExitUsage;
  }
  absl::StatusOr<v1::GetInfoResponse> info = GetServerInfo(server, absl::Seconds(10), CredentialsFromFlags());
  if (!info.ok()) {
    std::fprintf(stderr, "sluice info: %s\n", info.status().ToString().c_str());
    return ExitCodeOf(info.status());
  }
  std::printf("server:    %s (sluiced %s)\n", server.c_str(), info->server_version().c_str());
  std::printf("backend:   %s\n", info->backend().c_str());
  for (const v1::DeviceInfo& d : info->devices()) {
    std::printf("device:    %s [%s], %u compute units\n", d.name().c_str(), d.id().c_str(),
                d.compute_units());
    std::printf("version:   %s\n", d.version().c_str());
    const v1::MemoryInfo& m = d.memory();
    std::printf("memory:    %s used of %s (peak %s; scratch %s), %s pinned host memory\n",
                HumanBytes(m.used()).c_str(), HumanBytes(m.total()).c_str(),
                HumanBytes(m.peak()).c_str(), HumanBytes(m.scratch()).c_str(),
                HumanBytes(m.host_pinned()).c_str());
    const v1::DeviceCounters& c = d.counters();
    std::printf("work:      %llu kernel passes, %llu synchronizations, %s up, %s down\n",
                static_cast<unsigned long long>(c.launches()),
                static_cast<unsigned long long>(c.synchronizations()),
                HumanBytes(c.bytes_uploaded()).c_str(), HumanBytes(c.bytes_downloaded()).c_str());
  }
  if (!info->has_tenant()) {  // a tenant sees no other tenant's sessions
    std::printf("sessions:  %u active of at most %u, %llu opened since start\n",
                info->active_sessions(), info->max_sessions(),
                static_cast<unsigned long long>(info->sessions_opened()));
  }
  if (info->has_tenant()) {
    const v1::TenantInfo& t = info->tenant();
    std::printf("tenant:    %s: %u sessions of at most %u, %s of %s of buffers, %s of %s of "
                "transfers, weight %u, %.3f s of device time\n",
                t.name().c_str(), t.sessions(), t.max_sessions(),
                HumanBytes(t.memory_used()).c_str(), HumanBytes(t.memory_limit()).c_str(),
                HumanBytes(t.transfer_bytes_in_use()).c_str(),
                HumanBytes(t.transfer_bytes_limit()).c_str(), t.weight(),
                static_cast<double>(t.device_time_us()) / 1e6);
  } else {
    std::printf("clients:   at most %u sessions, %s of buffers and %s of transfers each (a "
                "client is a host and user)\n",
                info->max_sessions_per_client(), HumanBytes(info->client_memory()).c_str(),
                HumanBytes(info->client_transfer_bytes()).c_str());
  }
  std::printf("transfers: %s in flight (at most %s, all sessions together)\n",
              HumanBytes(info->transfer_bytes_in_use()).c_str(),
              HumanBytes(info->transfer_bytes_limit()).c_str());
  std::printf("streams:   %u not yet open (at most %u; each sends at most %u messages of %s "
              "before its open, pings of %s); each holds at most %u requests or %s waiting to "
              "run and %s of unread replies; gRPC at most %s\n",
              info->unopened_streams(), info->max_unopened_streams(),
              info->max_unopened_messages(),
              HumanBytes(info->max_unopened_message_bytes()).c_str(),
              HumanBytes(info->max_unopened_ping_payload()).c_str(),
              info->max_queued_requests(), HumanBytes(info->max_queued_bytes()).c_str(),
              HumanBytes(info->max_unsent_reply_bytes()).c_str(),
              HumanBytes(info->grpc_memory()).c_str());
  if (info->has_host_memory()) {
    const v1::HostMemory& m = info->host_memory();
    std::printf("host:      at most %s of the host's %s for clients: transfers %s, gRPC %s, "
                "unopened streams %s, sessions past their shares %s, device buffers %s, pinned "
                "staging %s, upload blocks kept warm %s\n",
                HumanBytes(m.total()).c_str(), HumanBytes(m.host()).c_str(),
                HumanBytes(m.transfers()).c_str(), HumanBytes(m.grpc()).c_str(),
                HumanBytes(m.unopened_streams()).c_str(), HumanBytes(m.past_shares()).c_str(),
                HumanBytes(m.device_buffers()).c_str(), HumanBytes(m.device_staging()).c_str(),
                HumanBytes(m.upload_blocks()).c_str());
  }
  if (info->resume_grace_ms() > 0) {
    std::printf("resume:    a resumable session waits %.1f s for its client after its connection "
                "breaks\n",
                static_cast<double>(info->resume_grace_ms()) / 1000);
  } else {
    std::printf("resume:    sessions end with their connection (--resume_grace=0)\n");
  }
  const v1::SessionLimits& l = info->default_limits();
  std::printf(
      "limits:    chunk %s (%s to %s), quota %s per session, %llu buffers, %llu steps, "
      "%llu ranges, %s per request\n",
      HumanBytes(l.chunk_size()).c_str(), HumanBytes(info->min_chunk_size()).c_str(),
      HumanBytes(info->max_chunk_size()).c_str(), HumanBytes(l.memory_quota()).c_str(),
      static_cast<unsigned long long>(l.max_buffers()),
      static_cast<unsigned long long>(l.max_steps()),
      static_cast<unsigned long long>(l.max_ranges()), HumanBytes(l.max_request_bytes()).c_str());
  std::printf("kernels:   %d (catalog %s)\n", info->kernels_size(),
              info->catalog_fingerprint().c_str());
  for (const v1::KernelInfo& k : info->kernels()) {
    std::printf("  %s v%u: %s\n", k.name().c_str(), k.version(), k.summary().c_str());
    std::vector<std::string> bindings;
    for (const v1::KernelBinding& b : k.bindings()) {
      std::vector<std::string> at_least;
      if (b.min_elements() > 0) at_least.push_back(absl::StrCat(b.min_elements()));
      for (const v1::SizeRule& rule : b.size_rules()) at_least.push_back(rule.text());
      bindings.push_back(absl::StrFormat(
          "%s(%dB %s%s)", b.name(), b.element_size(), b.access(),
          at_least.empty() ? "" : absl::StrCat(" >=", absl::StrJoin(at_least, ", >="))));
    }
    std::printf("      bindings: %s\n", bindings.empty() ? "-" : absl::StrJoin(bindings, ", ").c_str());
    std::vector<std::string> params;
    for (const v1::KernelParam& p : k.params()) {
      params.push_back(p.min_value() > 0
                           ? absl::StrFormat("%d<=%s<=%d", p.min_value(), p.name(), p.max_value())
                           : absl::StrFormat("%s<=%d", p.name(), p.max_value()));
    }
    std::printf("      params:   %s\n", params.empty() ? "-" : absl::StrJoin(params, ", ").c_str());
    std::printf("      grid:     %s%s\n", k.default_grid().c_str(),
                k.accepts_grid_override() ? " (overridable)"
                : k.loop_guard()          ? " (loop guard: first repeated step only)"
                                          : "");
    if (k.may_alias_size() > 0) {
      std::vector<std::string> pairs;
      // Indexes come from the server: name them only when they are bindings of this kernel.
      const auto name = [&k](uint32_t b) {
        return b < static_cast<uint32_t>(k.bindings_size()) ? k.bindings(static_cast<int>(b)).name()
                                                            : absl::StrCat("#", b);
      };
      for (int i = 0; i + 1 < k.may_alias_size(); i += 2) {
        pairs.push_back(absl::StrFormat("%s=%s", name(k.may_alias(i)), name(k.may_alias(i + 1))));
      }
      std::printf("      may alias: %s\n", absl::StrJoin(pairs, ", ").c_str());
    }
  }
  return kExitOk;
#else
  std::fprintf(stderr, "sluice info: this build has no gRPC client\n");
  return kExitFailed;
#endif
}

}  // namespace sluice
