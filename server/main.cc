// sluiced: the Sluice daemon. Owns one device and serves resident dispatch to analysis jobs,
// one gRPC Session stream per job. This file is the composition root: flags -> options ->
// device, session manager, executor, service, server.
//
//   sluiced [--listen=127.0.0.1:7450] [--backend=auto|cpu|cuda] [--chunk_size=1M] ...
//
// With --listen=HOST:0 it binds a free port; --listen=unix:///PATH serves a Unix socket. Once
// serving it prints exactly one line on stdout, "sluiced listening on HOST:PORT" (or on the
// unix: address). SIGTERM or SIGINT drains: no new sessions, running ones
// get --drain_timeout to finish before they are cancelled, every buffer is freed, exit 0. A
// device lost for good (a GPU whose reset after a failure failed) drains it the same way, and
// it exits 3, for its supervisor to start it again. SIGHUP reloads --tenants_file (a file
// that does not parse is logged and the tenants stay as they were; sessions of a tenant or
// token no longer listed are ended with UNAUTHENTICATED); SIGUSR1 logs a
// status line; SIGQUIT and SIGXCPU drain like SIGTERM; SIGPIPE and SIGXFSZ are ignored, so a
// closed log or stdout never ends the daemon; any other signal that would end a process (a
// fault's aside) is logged and ignored. No signal but SIGKILL ends it without a drain.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "absl/algorithm/container.h"
#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "google/protobuf/stubs/logging.h"
#include "sluice/base/byte_size.h"
#include "sluice/base/command_line.h"
#include "sluice/base/heap.h"
#include "sluice/base/log.h"
#include "sluice/engine/device_factory.h"
#include "sluice/engine/session_manager.h"
#include "sluice/proto/contract.h"
#include "sluice/server/grpc/daemon.h"
#include "sluice/server/tenants.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7450",
          "host:port to serve on; port 0 picks a free port (printed at start). Or a Unix "
          "socket, unix:PATH or unix:///ABSOLUTE_PATH, for clients on this host: made with mode "
          "0660 (the daemon's user and group may connect), removed at exit");
ABSL_FLAG(bool, shared_memory, true,
          "with a unix: --listen, offer sessions on this host the shared-memory data path: a "
          "second socket, the listen path plus \".shm\", takes the memory clients share "
          "(sealed memfds passed over it), so large uploads and reads skip the stream");
ABSL_FLAG(std::string, backend, "auto", "device backend: auto, cpu or cuda");
ABSL_FLAG(std::string, tenants_file, "",
          "TOML file of the tenants that share the daemon: their token digests, limits and "
          "weights (docs/tenants.md); reloaded on SIGHUP. Without it the daemon serves only "
          "loopback");
ABSL_FLAG(bool, allow_unauthenticated, false,
          "without --tenants_file, serve an address other than loopback anyway (anyone who can "
          "reach it may use the device)");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain: serve TLS (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificates: require every client to present a certificate they signed "
          "(mutual TLS)");
// Defaults are the engine's, so a daemon and an embedded session get the same limits; a 0
// follows the machine (see SessionManager::Options::FollowMachine).
ABSL_FLAG(sluice::ByteSize, chunk_size,
          sluice::ByteSize{sluice::SessionLimits{}.chunk_size},
          "default bytes per data message when a client states no preference");
ABSL_FLAG(sluice::ByteSize, max_chunk_size,
          sluice::ByteSize{sluice::SessionManager::Options{}.max_chunk_size},
          "largest chunk a client may negotiate, 4K to 64M (the daemon takes messages that "
          "large)");
ABSL_FLAG(uint32_t, max_sessions, sluice::SessionManager::Options{}.max_sessions,
          "sessions served at once");
ABSL_FLAG(uint32_t, max_sessions_per_client, 0,
          "sessions one client (its tenant, or without tenants its host and user) may hold at "
          "once (0: a quarter of --max_sessions)");
ABSL_FLAG(absl::Duration, share_quantum, sluice::SessionManager::Options{}.share_quantum,
          "device time is shared out by client: how long a client holds the device before "
          "another as well served may have it");
ABSL_FLAG(absl::Duration, share_credit, sluice::SessionManager::Options{}.share_credit,
          "how far ahead of the busy clients one that was idle comes back (a short request "
          "runs at once)");
ABSL_FLAG(sluice::ByteSize, session_memory, sluice::ByteSize{0},
          "bytes of device buffers one session may hold at once (0: half of the device's "
          "memory)");
ABSL_FLAG(sluice::ByteSize, client_memory, sluice::ByteSize{0},
          "bytes of device buffers all of one client's sessions may hold together (0: as "
          "--session_memory)");
ABSL_FLAG(uint64_t, max_buffers, sluice::SessionLimits{}.max_buffers,
          "buffers one session may hold at once");
ABSL_FLAG(uint64_t, max_steps, sluice::SessionLimits{}.max_steps,
          "kernel steps per sequence");
ABSL_FLAG(uint64_t, max_ranges, sluice::SessionLimits{}.max_ranges,
          "ranges per upload, read or sequence");
ABSL_FLAG(uint64_t, max_request_seconds, sluice::SessionLimits{}.max_request_seconds,
          "seconds one execute may run before it stops with DEADLINE_EXCEEDED (0: no limit; "
          "uploads and reads are bounded by their bytes)");
ABSL_FLAG(sluice::ByteSize, max_request_bytes, sluice::ByteSize{0},
          "bytes uploaded or read back by one request (0: 4G, or less where "
          "--max_transfer_bytes holds less as the largest request)");
ABSL_FLAG(sluice::ByteSize, max_transfer_bytes, sluice::ByteSize{0},
          "host memory for everything streams hold (uploads, reads and replies waiting to be "
          "sent, requests waiting to run), all sessions together, at least what the largest "
          "request holds: --max_request_bytes plus --max_chunk_size, or a read's replies in 4K "
          "chunks where they hold more (0: a quarter of the host's memory, within [256M, 8G])");
ABSL_FLAG(sluice::ByteSize, client_transfer_bytes, sluice::ByteSize{0},
          "a client's share of --max_transfer_bytes, all its streams together (a tenant's is "
          "its transfer_share); past it the client is not read (0: half of "
          "--max_transfer_bytes, but at least what the largest request holds)");
ABSL_FLAG(sluice::ByteSize, cpu_memory, sluice::ByteSize{0},
          "CPU backend: device memory limit (0: half of the host's memory, or of the "
          "container's limit where lower)");
ABSL_FLAG(int, cpu_threads, 0,
          "CPU backend: kernel threads (0: every hardware thread; at most 1024)");
ABSL_FLAG(int, cuda_device, 0, "CUDA backend: which GPU");
ABSL_FLAG(sluice::ByteSize, cuda_memory, sluice::ByteSize{0},
          "CUDA backend: device memory limit (0: 90% of the GPU's free memory)");
ABSL_FLAG(sluice::ByteSize, cuda_pinned_reads, sluice::ByteSize{sluice::kCudaDefaultPinnedReadBytes},
          "CUDA backend: page-locked host memory that reads of all sessions together may land "
          "in (a read past it goes through its session's 32 MiB staging ring)");
ABSL_FLAG(int, executor_threads, 0,
          "most threads running session work, started as needed (0: one per session and 16 "
          "more, at most 4096)");
ABSL_FLAG(absl::Duration, open_timeout, sluice::StreamTimeouts{}.open,
          "a stream that has not opened a session this long after it started is ended");
ABSL_FLAG(absl::Duration, idle_timeout, sluice::StreamTimeouts{}.idle,
          "an open session with no request and no work this long is ended, its buffers freed");
ABSL_FLAG(absl::Duration, stall_timeout, sluice::StreamTimeouts{}.stall,
          "a session whose upload sends nothing, or whose client reads no reply, this long is "
          "ended");
ABSL_FLAG(uint32_t, max_unopened_streams, sluice::SluiceService::Options{}.max_unopened_streams,
          "streams that have not opened a session yet, at most (when another connects, the one "
          "that waited longest is ended)");
ABSL_FLAG(sluice::ByteSize, grpc_memory, sluice::ByteSize{0},
          "memory gRPC may use for all connections, its resource quota (0: a sixteenth of the "
          "host's memory, within [256M, 1G])");
ABSL_FLAG(absl::Duration, resume_grace, sluice::SluiceService::Options{}.resume_grace,
          "how long a resumable session keeps its buffers once its connection breaks, for its "
          "client to resume it (0: sessions end with their stream)");
ABSL_FLAG(std::string, metrics_listen, "",
          "host:port to serve Prometheus metrics on (GET /metrics; port 0 picks a free port, "
          "logged at start); empty: none. Metrics name no token and no tenant's data, but show "
          "the daemon's whole load: serve them where only monitoring reaches");
ABSL_FLAG(std::string, health_listen, "",
          "host:port of a plaintext port serving only gRPC's health service (for probes that "
          "cannot do TLS or send a token, as Kubernetes' gRPC probe); empty: none (health is "
          "served on --listen too)");
ABSL_FLAG(sluice::LogFormat, log_format, sluice::LogFormat::kText,
          "log lines on stderr: text, or json (one object a line: time, level, program, "
          "session, peer, client, tenant, message)");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(10),
          "on SIGTERM/SIGINT, how long running sessions may take before they are cancelled");

namespace sluice {
namespace {

// libprotobuf's own lines (a message it refused, say) go to the daemon's log with its time and
// the client whose bytes they are about, limited as any client's lines are.
void LogFromProtobuf(google::protobuf::LogLevel level, const char* file, int line,
                     const std::string& message) {
  const char* name = level == google::protobuf::LOGLEVEL_INFO      ? "INFO"
                     : level == google::protobuf::LOGLEVEL_WARNING ? "WARNING"
                     : level == google::protobuf::LOGLEVEL_ERROR   ? "ERROR"
                                                                   : "FATAL";
  // Limited per client host: the context's peer, "ipv4:10.0.0.7:51234".
  const std::string context = LogContext::Current().peer;
  const size_t port = context.rfind(':');
  const std::string host = port == std::string::npos ? context : context.substr(0, port);
  LogLimited(absl::StrCat("libprotobuf ", host),
             absl::StrFormat("libprotobuf %s %s:%d: %s", name, file, line, message), {},
             level == google::protobuf::LOGLEVEL_INFO ? LogLevel::kInfo : LogLevel::kWarning);
}

// Signals that drain the daemon: those a supervisor or a user sends to stop a process, and the
// CPU-time limit's warning.
constexpr int kDrainSignals[] = {SIGTERM, SIGINT, SIGQUIT, SIGXCPU};

// "SIGTERM", "SIGRTMIN+3", ...
std::string SignalName(int signal_number) {
  if (signal_number >= SIGRTMIN && signal_number <= SIGRTMAX) {
    return absl::StrCat("SIGRTMIN+", signal_number - SIGRTMIN);
  }
  const char* abbrev = sigabbrev_np(signal_number);
  return abbrev != nullptr ? absl::StrCat("SIG", abbrev) : absl::StrCat("signal ", signal_number);
}

// One line of what the daemon holds, for SIGUSR1.
void LogStatus(Daemon& daemon) {
  const MemoryInfo memory = daemon.device().memory();
  Log("status: %d sessions open (%d since start), device memory %d bytes used (%d at peak), "
      "%d transfer bytes in flight, %d bytes resident",
      daemon.sessions().active_sessions(), daemon.sessions().sessions_opened(), memory.used,
      memory.peak, daemon.sessions().transfers().in_use(), ResidentBytes());
}

// SIGHUP: reads the tenants file again. One that does not parse changes nothing.
void ReloadTenants(Daemon& daemon, const std::string& path) {
  if (path.empty()) {
    Log("received SIGHUP: no --tenants_file to reload; still serving");
    return;
  }
  absl::StatusOr<std::shared_ptr<const TenantTable>> tenants = TenantTable::Load(path);
  if (!tenants.ok()) {
    Log("received SIGHUP: the tenants file is unchanged for the daemon, as it cannot be used: "
        "%s",
        tenants.status().message());
    return;
  }
  const size_t count = (*tenants)->tenants().size();
  const uint32_t before = daemon.sessions().active_sessions();
  daemon.service().SetTenants(*std::move(tenants));
  Log("received SIGHUP: %d tenants from %s (%d sessions were open; those of tenants or tokens "
      "no longer listed are ended)",
      count, path, before);
}

int Main() {
  SetLogTag("sluiced");
  SetLogFormat(absl::GetFlag(FLAGS_log_format));
  google::protobuf::SetLogHandler(&LogFromProtobuf);
  // A log or stdout whose reader went away fails the write instead of ending the daemon; a
  // file grown past its limit fails the write too.
  signal(SIGPIPE, SIG_IGN);
  signal(SIGXFSZ, SIG_IGN);
  // Every other signal whose default would end the process (a fault's aside) is taken by
  // sigwait below: those that ask it to stop drain it, the rest are logged. Blocked before any
  // thread starts, so that no thread dies of one.
  sigset_t signals;
  sigemptyset(&signals);
  for (const int s : kDrainSignals) sigaddset(&signals, s);
  for (const int s : {SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGIO, SIGPWR, SIGSTKFLT}) {
    sigaddset(&signals, s);
  }
  for (int s = SIGRTMIN; s <= SIGRTMAX; ++s) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  DaemonOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.allow_unauthenticated = absl::GetFlag(FLAGS_allow_unauthenticated);
  options.tls = {.cert = absl::GetFlag(FLAGS_tls_cert),
                 .key = absl::GetFlag(FLAGS_tls_key),
                 .client_ca = absl::GetFlag(FLAGS_tls_client_ca)};
  const std::string tenants_file = absl::GetFlag(FLAGS_tenants_file);
  if (!tenants_file.empty()) {
    absl::StatusOr<std::shared_ptr<const TenantTable>> tenants = TenantTable::Load(tenants_file);
    if (!tenants.ok()) {
      Log("%s", tenants.status().message());
      return kExitUsageError;
    }
    options.streams.tenants = *std::move(tenants);
  }
  options.executor_threads = absl::GetFlag(FLAGS_executor_threads);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.health_listen = absl::GetFlag(FLAGS_health_listen);
  options.shared_memory = absl::GetFlag(FLAGS_shared_memory);
  options.streams.timeouts = {.open = absl::GetFlag(FLAGS_open_timeout),
                              .idle = absl::GetFlag(FLAGS_idle_timeout),
                              .stall = absl::GetFlag(FLAGS_stall_timeout)};
  options.streams.max_unopened_streams = absl::GetFlag(FLAGS_max_unopened_streams);
  if (options.streams.max_unopened_streams == 0) {
    // The newest stream always waits for its open: at least one does.
    Log("--max_unopened_streams must be at least 1");
    return kExitUsageError;
  }
  options.streams.grpc_memory = absl::GetFlag(FLAGS_grpc_memory).bytes;
  options.streams.resume_grace = absl::GetFlag(FLAGS_resume_grace);
  if (options.streams.resume_grace < absl::ZeroDuration()) {
    Log("--resume_grace must not be negative");
    return kExitUsageError;
  }
  for (const absl::Duration timeout :
       {options.streams.timeouts.open, options.streams.timeouts.idle,
        options.streams.timeouts.stall}) {
    if (timeout <= absl::ZeroDuration()) {
      Log("--open_timeout, --idle_timeout and --stall_timeout must be positive");
      return kExitUsageError;
    }
  }
  // A device lost for good (a GPU whose reset failed) ends the daemon like SIGTERM would, and
  // it exits 3, so that a supervisor starts it again on a fresh device.
  static std::atomic<bool> device_lost{false};
  options.sessions.on_device_lost = [] {
    device_lost.store(true);
    Log("the device is lost to this process: draining and exiting for a restart");
    kill(getpid(), SIGTERM);
  };
  // After a load, the memory its transfers used goes back to the system (a moment after the
  // last session closed, or the last of a burst of streams ended, when their connections'
  // buffers have gone too).
  HeapTrimmer trimmer(absl::Seconds(2));  // outlives the daemon
  options.sessions.on_idle = [&trimmer] { trimmer.Poke(); };
  options.streams.on_stream_end = [&trimmer] { trimmer.Poke(); };
  options.sessions.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  options.sessions.max_sessions_per_client = absl::GetFlag(FLAGS_max_sessions_per_client);
  options.sessions.client_memory = absl::GetFlag(FLAGS_client_memory).bytes;
  options.sessions.share_quantum = absl::GetFlag(FLAGS_share_quantum);
  options.sessions.share_credit = absl::GetFlag(FLAGS_share_credit);
  if (options.sessions.share_quantum <= absl::ZeroDuration() ||
      options.sessions.share_credit < absl::ZeroDuration()) {
    Log("--share_quantum must be positive and --share_credit not negative");
    return kExitUsageError;
  }
  SessionLimits& limits = options.sessions.limits;
  const uint64_t max_chunk = absl::GetFlag(FLAGS_max_chunk_size).bytes;
  const uint64_t chunk = absl::GetFlag(FLAGS_chunk_size).bytes;
  // A session asking for no chunk size in particular gets --chunk_size, which GetInfo
  // publishes: one below what a session may negotiate would not be what it gets.
  if (max_chunk < kMinChunkSize || max_chunk > kMaxChunkSize || chunk < kMinChunkSize) {
    Log("--max_chunk_size must lie in [%s, %s] and --chunk_size must be at least %s",
        AbslUnparseFlag(ByteSize{kMinChunkSize}), AbslUnparseFlag(ByteSize{kMaxChunkSize}),
        AbslUnparseFlag(ByteSize{kMinChunkSize}));
    return kExitUsageError;
  }
  options.sessions.max_chunk_size = static_cast<uint32_t>(max_chunk);
  limits.chunk_size = static_cast<uint32_t>(std::min(chunk, max_chunk));
  // Room for a full chunk plus the request's ranges or steps.
  limits.max_message_bytes = max_chunk + kMessageOverheadBytes;
  limits.memory_quota = absl::GetFlag(FLAGS_session_memory).bytes;
  limits.max_buffers = absl::GetFlag(FLAGS_max_buffers);
  limits.max_steps = absl::GetFlag(FLAGS_max_steps);
  limits.max_ranges = absl::GetFlag(FLAGS_max_ranges);
  limits.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes).bytes;
  limits.max_request_seconds = absl::GetFlag(FLAGS_max_request_seconds);
  options.sessions.max_transfer_bytes = absl::GetFlag(FLAGS_max_transfer_bytes).bytes;
  options.sessions.client_transfer_bytes = absl::GetFlag(FLAGS_client_transfer_bytes).bytes;

  absl::StatusOr<std::shared_ptr<Device>> device =
      CreateDevice(absl::GetFlag(FLAGS_backend),
                   DeviceOptions{.cpu_memory_limit = absl::GetFlag(FLAGS_cpu_memory).bytes,
                                 .cpu_threads = absl::GetFlag(FLAGS_cpu_threads),
                                 .cuda_ordinal = absl::GetFlag(FLAGS_cuda_device),
                                 .cuda_memory_limit = absl::GetFlag(FLAGS_cuda_memory).bytes,
                                 .cuda_pinned_read_bytes =
                                     absl::GetFlag(FLAGS_cuda_pinned_reads).bytes});
  if (!device.ok()) {
    Log("cannot create the device: %s", device.status().ToString());
    return kExitUsageError;
  }
  std::shared_ptr<Device> shared_device = *device;
  // The limits left at 0 follow this device and host: resolved here to be checked and logged.
  options.sessions =
      options.sessions.FollowMachine(shared_device->memory().total, PhysicalMemoryBytes());
  if (absl::Status usable = options.sessions.Check(); !usable.ok()) {
    Log("%s", usable.message());
    return kExitUsageError;
  }
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(shared_device, options);
  if (!daemon.ok()) {
    Log("cannot start: %s", daemon.status().ToString());
    return absl::IsUnavailable(daemon.status()) ? kExitFailed : kExitUsageError;
  }
  const DeviceInfo& info = shared_device->info();
  // Who may use the daemon, and over what, said in its start-up line.
  const std::string transport = options.tls.client_ca.empty()
                                    ? (options.tls.enabled() ? "TLS" : "plaintext")
                                    : "mutual TLS";
  std::string access;
  if (options.streams.tenants != nullptr) {
    access = absl::StrFormat("%d tenants from %s (every call needs a tenant's token)",
                             options.streams.tenants->tenants().size(), tenants_file);
  } else if (UnixSocketPath(options.listen).has_value()) {
    access = "no tenants: unauthenticated, for the socket's user and group (mode 0660)";
  } else if (IsLocalAddress(options.listen)) {
    access = "no tenants: unauthenticated, loopback only";
  } else {
    access = "no tenants: UNAUTHENTICATED on a non-loopback address (--allow_unauthenticated): "
             "anyone who can reach it may use the device";
  }
  Log("serving on %s (%s; %s) with %s (%s, %s); up to %d sessions (%d per client) of %s each, "
      "%s per client, %s of transfers, %s per request",
      (*daemon)->address(), transport, access, info.id, info.name, info.version,
      options.sessions.max_sessions, options.sessions.max_sessions_per_client,
      AbslUnparseFlag(ByteSize{limits.memory_quota}),
      AbslUnparseFlag(ByteSize{options.sessions.client_memory}),
      AbslUnparseFlag(ByteSize{options.sessions.max_transfer_bytes}),
      AbslUnparseFlag(ByteSize{limits.max_request_bytes}));
  if (!(*daemon)->metrics_address().empty()) {
    Log("metrics on http://%s/metrics", (*daemon)->metrics_address());
  }
  if (!(*daemon)->health_address().empty()) {
    Log("health checks (plaintext, health service only) on %s", (*daemon)->health_address());
  }
  std::printf("sluiced listening on %s\n", (*daemon)->address().c_str());
  std::fflush(stdout);

  int signal_number = 0;
  for (;;) {
    sigwait(&signals, &signal_number);
    if (absl::c_linear_search(kDrainSignals, signal_number)) break;
    if (signal_number == SIGHUP) {
      ReloadTenants(**daemon, tenants_file);
    } else if (signal_number == SIGUSR1) {
      LogStatus(**daemon);
    } else {
      Log("received %s: ignored (SIGTERM or SIGINT drains the daemon); still serving",
          SignalName(signal_number));
    }
  }
  const absl::Duration grace = absl::GetFlag(FLAGS_drain_timeout);
  Log("received %s: draining %d sessions (grace %s)", SignalName(signal_number),
      (*daemon)->sessions().active_sessions(), absl::FormatDuration(grace));
  (*daemon)->Shutdown(grace);
  const MemoryInfo memory = shared_device->memory();
  // The device's own scratch stays with the device; every buffer must be gone.
  Log("drained: %d sessions served, %d bytes of buffers still allocated; exiting",
      (*daemon)->sessions().sessions_opened(), memory.buffers());
  daemon->reset();
  if (device_lost.load()) return kExitDeviceLost;
  return memory.buffers() == 0 ? kExitOk : kExitFailed;
}

}  // namespace
}  // namespace sluice

int main(int argc, char** argv) {
  constexpr char kUsage[] =
      "sluiced [flags]: serves resident GPU dispatch to analysis jobs over gRPC.\n"
      "Prints \"sluiced listening on HOST:PORT\" once serving; SIGTERM or SIGINT drains it.\n"
      "Exit codes: 0 drained with every buffer freed, 1 a failure (cannot listen, buffers left\n"
      "after the drain), 2 bad flags or no such device, 3 the GPU was lost for good.";
  absl::SetProgramUsageMessage(kUsage);
  const sluice::ParsedCommandLine parsed =
      sluice::ParseCommandLine(argc, argv, {.usage = kUsage, .flag_sources = {"server/main.cc"}});
  if (parsed.exit_code) return *parsed.exit_code;
  if (parsed.positional.size() > 1) {
    std::fprintf(stderr, "sluiced: unexpected argument '%s' (sluiced takes only flags)\n",
                 parsed.positional[1].c_str());
    return sluice::kExitUsageError;
  }
  return sluice::Main();
}
