// Remote dispatch against a bare gRPC baseline, on the same machine in the same run.
//
//   latency:    4-byte ranged read through RemoteDispatch vs a bare streaming ping-pong of a
//               4-byte message (p50, p99; rounds alternate so drift hits both equally), and the
//               same read on a session that polls 100 us for each reply before it sleeps
//   throughput: UploadMany of one large buffer vs streaming the same bytes through a bare
//               client stream in messages of the same chunk size, and vs memcpy; DownloadInto
//               of it vs a bare server stream of as many bytes (each copied into place)
//
// Both servers run in this process on loopback TCP: sluiced's service over the CPU device, and
// a minimal echo service. Prints a table and the ratios against their targets (docs/benchmarks.md).
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/json_out.h"
#include "echo.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/engine/cpu_device.h"
#include "sluice/server/grpc/daemon.h"

ABSL_FLAG(int, latency_rounds, 6, "alternating rounds of latency samples");
ABSL_FLAG(int, latency_samples, 1000, "samples per method per round");
ABSL_FLAG(int, upload_mib, 256, "bytes per throughput transfer, in MiB");
ABSL_FLAG(int, upload_repeats, 5, "throughput transfers per method (the median is reported)");
ABSL_FLAG(std::string, json, "", "also write the figures, by name, to this JSON file");
ABSL_FLAG(int, same_host_mib, 1024,
          "bytes per same-host transfer (a daemon on a Unix socket, shared memory), in MiB; 0 "
          "skips them");
ABSL_FLAG(int, same_host_repeats, 3, "same-host transfers per method (the median is reported)");
ABSL_FLAG(bool, resumable, true,
          "open the session resumable (the daemon records replies, the client keeps requests "
          "until answered), as RemoteDispatch does by default");

namespace sluice::bench {
namespace {

constexpr int kChunk = 1 << 20;
// The ranged read again on a session whose calls look this long for their reply before they
// sleep (RemoteDispatch::Options::reply_poll).
constexpr absl::Duration kReplyPoll = absl::Microseconds(100);

class PingPongReactor : public grpc::ServerBidiReactor<Blob, Blob> {
 public:
  PingPongReactor() { StartRead(&blob_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    StartWrite(&blob_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::CANCELLED);
      return;
    }
    StartRead(&blob_);
  }
  void OnDone() override { delete this; }

 private:
  Blob blob_;
};

class SinkReactor : public grpc::ServerReadReactor<Blob> {
 public:
  explicit SinkReactor(Ack* ack) : ack_(ack) { StartRead(&blob_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      ack_->set_bytes(bytes_);
      Finish(grpc::Status::OK);
      return;
    }
    bytes_ += blob_.data().size();
    StartRead(&blob_);
  }
  void OnDone() override { delete this; }

 private:
  Ack* ack_;
  Blob blob_;
  uint64_t bytes_ = 0;
};

class SourceReactor : public grpc::ServerWriteReactor<Blob> {
 public:
  explicit SourceReactor(uint64_t bytes) : left_(bytes) {
    blob_.mutable_data()->assign(kChunk, 's');
    Next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::CANCELLED);
      return;
    }
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (left_ == 0) {
      Finish(grpc::Status::OK);
      return;
    }
    const uint64_t n = std::min<uint64_t>(kChunk, left_);
    blob_.mutable_data()->resize(n);
    left_ -= n;
    StartWrite(&blob_);
  }
  Blob blob_;
  uint64_t left_;
};

class EchoService final : public Echo::CallbackService {
  grpc::ServerBidiReactor<Blob, Blob>* PingPong(grpc::CallbackServerContext*) override {
    return new PingPongReactor();
  }
  grpc::ServerReadReactor<Blob>* Sink(grpc::CallbackServerContext*, Ack* ack) override {
    return new SinkReactor(ack);
  }
  grpc::ServerWriteReactor<Blob>* Source(grpc::CallbackServerContext*,
                                         const Ack* request) override {
    return new SourceReactor(request->bytes());
  }
};

double Percentile(std::vector<double> samples, double p) {
  std::sort(samples.begin(), samples.end());
  return samples[static_cast<size_t>(p * (samples.size() - 1))];
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

double NowUs() {
  return absl::ToDoubleMicroseconds(absl::Now() - absl::UnixEpoch());
}

// The same-host data path: a daemon on a Unix socket, a client on this host. A large upload
// through shared memory (copied in from the caller's memory, and from the staging area, which
// needs no copy), against memcpy of as many bytes and against the same upload over the Unix
// socket's stream; a download of it likewise.
int SameHost(std::shared_ptr<CpuDevice> device) {
  char dir[] = "/tmp/sluice-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  const size_t bytes = static_cast<size_t>(absl::GetFlag(FLAGS_same_host_mib)) << 20;
  DaemonOptions options;
  options.listen = absl::StrCat("unix://", dir, "/sluiced.sock");
  options.sessions.limits.max_request_bytes = bytes;
  // The largest transfer, and the shared memory the client maps beside it (counted to it while
  // the daemon maps it too): the ring of 128 MiB its uploads are copied in through, then
  // the staging area of the transfer's size, attached while the ring still is.
  options.sessions.max_transfer_bytes = bytes + (uint64_t{192} << 20);
  options.sessions.client_transfer_bytes = options.sessions.max_transfer_bytes;  // one client
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(device, options);
  if (!daemon.ok()) {
    std::fprintf(stderr, "%s\n", daemon.status().ToString().c_str());
    return 1;
  }
  const auto connect = [&](bool shared) {
    RemoteDispatch::Options options;
    options.target = (*daemon)->address();
    options.client_name = shared ? "bench-shm" : "bench-unix";
    options.chunk_size = kChunk;
    options.shared_memory = shared;
    return RemoteDispatch::Connect(options);
  };
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> shm = connect(true);
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> plain = connect(false);
  if (!shm.ok() || !plain.ok() || !(*shm)->shared_memory()) {
    std::fprintf(stderr, "no shared memory on %s\n", (*daemon)->address().c_str());
    return 1;
  }
  std::vector<uint8_t> payload(bytes);
  for (size_t i = 0; i < bytes; i += 4096) payload[i] = static_cast<uint8_t>(i >> 12);
  std::vector<uint8_t> target(bytes, 1), downloaded;
  absl::StatusOr<Resource> on_shm = (*shm)->Allocate(bytes);
  absl::StatusOr<Resource> on_plain = (*plain)->Allocate(bytes);
  // Says what failed, and fails the bench.
  const auto failed = [](const char* what, const absl::Status& status) {
    std::fprintf(stderr, "same host: %s: %s\n", what, status.ToString().c_str());
    return 1;
  };
  if (!on_shm.ok()) return failed("allocate", on_shm.status());
  if (!on_plain.ok()) return failed("allocate", on_plain.status());
  std::vector<double> mem, stream_up, shm_up, stream_down, shm_down, staged_up;
  const auto gbs = [bytes](double t0) { return bytes / ((NowUs() - t0) * 1e3); };
  for (int r = 0; r < absl::GetFlag(FLAGS_same_host_repeats); ++r) {
    double t0 = NowUs();
    std::memcpy(target.data(), payload.data(), bytes);
    mem.push_back(gbs(t0));
    t0 = NowUs();
    if (absl::Status s = (*plain)->Upload(*on_plain, payload); !s.ok()) {
      return failed("upload over the stream", s);
    }
    stream_up.push_back(gbs(t0));
    t0 = NowUs();
    if (absl::Status s = (*shm)->Upload(*on_shm, payload); !s.ok()) {
      return failed("upload through shared memory", s);
    }
    shm_up.push_back(gbs(t0));
    t0 = NowUs();
    if (absl::Status s = (*plain)->DownloadInto(*on_plain, &downloaded); !s.ok()) {
      return failed("download over the stream", s);
    }
    stream_down.push_back(gbs(t0));
    if (downloaded != payload) {
      return failed("download over the stream", absl::DataLossError("bytes differ"));
    }
    t0 = NowUs();
    if (absl::Status s = (*shm)->DownloadInto(*on_shm, &downloaded); !s.ok()) {
      return failed("download through shared memory", s);
    }
    shm_down.push_back(gbs(t0));
    if (downloaded != payload) {  // checked outside the time, as the stream's is not
      return failed("download through shared memory", absl::DataLossError("bytes differ"));
    }
  }
  // Last: the staging area takes the front of the shared memory, which reads need past it.
  absl::StatusOr<absl::Span<uint8_t>> staging = (*shm)->StagingArea(bytes);
  if (!staging.ok()) return failed("staging area", staging.status());
  std::memcpy(staging->data(), payload.data(), bytes);
  for (int r = 0; r < absl::GetFlag(FLAGS_same_host_repeats); ++r) {
    const double t0 = NowUs();
    if (absl::Status s = (*shm)->UploadAtMany({{*on_shm, 0, *staging}}); !s.ok()) {
      return failed("upload of the staging area", s);
    }
    staged_up.push_back(gbs(t0));
  }
  const uint64_t moved = (*shm)->counters().shared_bytes;
  std::printf("\nSame host: a daemon on a Unix socket, %zu MiB per transfer (GB/s, median)\n",
              bytes >> 20);
  std::printf("%-46s %10.2f\n", "memcpy", Median(mem));
  std::printf("%-46s %10.2f\n", "Upload over the Unix socket's stream", Median(stream_up));
  std::printf("%-46s %10.2f\n", "Upload through shared memory (copied in)", Median(shm_up));
  std::printf("%-46s %10.2f\n", "Upload of the staging area (no copy)", Median(staged_up));
  std::printf("%-46s %10.2f\n", "DownloadInto over the Unix socket's stream", Median(stream_down));
  std::printf("%-46s %10.2f\n", "DownloadInto through shared memory", Median(shm_down));
  std::printf("(%llu bytes moved through shared memory)\n", static_cast<unsigned long long>(moved));
  std::printf("\nratios (target in brackets)\n");
  std::printf("shared-memory upload / memcpy             %6.2fx  [>= 0.80x] %s\n",
              Median(shm_up) / Median(mem), Median(shm_up) / Median(mem) >= 0.8 ? "met" : "MISSED");
  std::printf("staging-area upload / memcpy              %6.2fx\n", Median(staged_up) / Median(mem));
  std::printf("shared-memory upload / Unix stream        %6.2fx\n", Median(shm_up) / Median(stream_up));
  std::printf("shared-memory download / memcpy           %6.2fx\n", Median(shm_down) / Median(mem));
  std::printf("shared-memory download / Unix stream      %6.2fx\n",
              Median(shm_down) / Median(stream_down));
  JsonOut& json = JsonOut::Get();
  json.Set("same_host_memcpy_gbs", Median(mem));
  json.Set("same_host_stream_upload_gbs", Median(stream_up));
  json.Set("same_host_shm_upload_gbs", Median(shm_up));
  json.Set("same_host_staged_upload_gbs", Median(staged_up));
  json.Set("same_host_stream_download_gbs", Median(stream_down));
  json.Set("same_host_shm_download_gbs", Median(shm_down));
  json.Set("shm_upload_over_memcpy_ratio", Median(shm_up) / Median(mem));
  json.Set("staged_upload_over_memcpy_ratio", Median(staged_up) / Median(mem));
  json.Set("shm_upload_over_unix_stream_ratio", Median(shm_up) / Median(stream_up));
  json.Set("shm_download_over_memcpy_ratio", Median(shm_down) / Median(mem));
  shm->reset();
  plain->reset();
  (*daemon)->Shutdown(absl::Seconds(5));
  rmdir(dir);
  return 0;
}

int Main() {
  // The echo baseline server.
  EchoService echo;
  int echo_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &echo_port);
  builder.RegisterService(&echo);
  builder.SetMaxReceiveMessageSize(8 << 20);
  std::unique_ptr<grpc::Server> echo_server = builder.BuildAndStart();
  // The Sluice daemon over the CPU device.
  absl::StatusOr<std::shared_ptr<CpuDevice>> device = CpuDevice::Create({});
  if (!device.ok() || echo_server == nullptr) return 1;
  DaemonOptions options;
  options.listen = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(*device, options);
  if (!daemon.ok()) {
    std::fprintf(stderr, "%s\n", daemon.status().ToString().c_str());
    return 1;
  }
  const std::string echo_address = "127.0.0.1:" + std::to_string(echo_port);

  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  auto echo_channel =
      grpc::CreateCustomChannel(echo_address, grpc::InsecureChannelCredentials(), args);
  auto echo_stub = Echo::NewStub(echo_channel);
  // Named, not a designated-initializer temporary: GCC 12 at -O3 warns (wrongly) that the
  // temporary's strings may be used uninitialized.
  RemoteDispatch::Options remote_options;
  remote_options.target = (*daemon)->address();
  remote_options.client_name = "bench";
  remote_options.chunk_size = kChunk;
  remote_options.resumable = absl::GetFlag(FLAGS_resumable);
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> remote = RemoteDispatch::Connect(remote_options);
  if (!remote.ok()) {
    std::fprintf(stderr, "%s\n", remote.status().ToString().c_str());
    return 1;
  }
  RemoteDispatch& d = **remote;
  // The same session, but one whose calls look for their reply before they sleep
  // (Options::reply_poll): what that gives a client whose cores idle while it waits.
  RemoteDispatch::Options polling_options = remote_options;
  polling_options.client_name = "bench-polling";
  polling_options.reply_poll = kReplyPoll;
  absl::StatusOr<std::unique_ptr<RemoteDispatch>> polling =
      RemoteDispatch::Connect(polling_options);
  if (!polling.ok()) {
    std::fprintf(stderr, "%s\n", polling.status().ToString().c_str());
    return 1;
  }

  // ---- Latency ----
  grpc::ClientContext ping_context;
  auto ping_stream = echo_stub->PingPong(&ping_context);
  Blob ping;
  ping.set_data(std::string(4, 'x'));
  Blob pong;
  absl::StatusOr<Resource> small = d.Allocate(64 << 20);
  absl::StatusOr<Resource> polled_small = (*polling)->Allocate(64 << 20);
  if (!small.ok() || !polled_small.ok()) return 1;
  std::vector<uint8_t> out;
  out.reserve(64);
  std::vector<double> bare_us, read_us, ping_us, polled_us;
  const int rounds = absl::GetFlag(FLAGS_latency_rounds);
  const int samples = absl::GetFlag(FLAGS_latency_samples);
  for (int warm = 0; warm < 200; ++warm) {
    ping_stream->Write(ping);
    ping_stream->Read(&pong);
    d.DownloadRangeInto(*small, 4096, 4, &out).IgnoreError();
    (*polling)->DownloadRangeInto(*polled_small, 4096, 4, &out).IgnoreError();
  }
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < samples; ++i) {
      const double t0 = NowUs();
      ping_stream->Write(ping);
      ping_stream->Read(&pong);
      bare_us.push_back(NowUs() - t0);
    }
    for (int i = 0; i < samples; ++i) {
      const double t0 = NowUs();
      if (!d.DownloadRangeInto(*small, (32 << 20) + 4 * i, 4, &out).ok()) return 1;
      read_us.push_back(NowUs() - t0);
    }
    for (int i = 0; i < samples / 4; ++i) {
      const double t0 = NowUs();
      if (!d.Ping(4).ok()) return 1;
      ping_us.push_back(NowUs() - t0);
    }
    for (int i = 0; i < samples; ++i) {
      const double t0 = NowUs();
      if (!(*polling)->DownloadRangeInto(*polled_small, (32 << 20) + 4 * i, 4, &out).ok()) {
        return 1;
      }
      polled_us.push_back(NowUs() - t0);
    }
  }
  ping_stream->WritesDone();
  ping_stream->Finish().IgnoreError();

  // ---- Throughput ----
  const size_t bytes = static_cast<size_t>(absl::GetFlag(FLAGS_upload_mib)) << 20;
  std::vector<uint8_t> payload(bytes);
  for (size_t i = 0; i < bytes; i += 4096) payload[i] = static_cast<uint8_t>(i >> 12);
  absl::StatusOr<Resource> big = d.Allocate(bytes);
  if (!big.ok()) return 1;
  std::vector<uint8_t> copy_target(bytes, 1);
  std::vector<double> memcpy_gbs, bare_gbs, upload_gbs, bare_down_gbs, download_gbs;
  std::vector<uint8_t> downloaded;
  Blob chunk;
  for (int r = 0; r < absl::GetFlag(FLAGS_upload_repeats); ++r) {
    double t0 = NowUs();
    std::memcpy(copy_target.data(), payload.data(), bytes);
    memcpy_gbs.push_back(bytes / ((NowUs() - t0) * 1e3));

    t0 = NowUs();
    {
      grpc::ClientContext context;
      Ack ack;
      auto writer = echo_stub->Sink(&context, &ack);
      for (size_t offset = 0; offset < bytes; offset += kChunk) {
        chunk.mutable_data()->assign(reinterpret_cast<const char*>(payload.data()) + offset,
                                     std::min<size_t>(kChunk, bytes - offset));
        writer->Write(chunk);
      }
      writer->WritesDone();
      if (!writer->Finish().ok() || ack.bytes() != bytes) return 1;
    }
    bare_gbs.push_back(bytes / ((NowUs() - t0) * 1e3));

    t0 = NowUs();
    if (!d.UploadMany({{*big, payload}}).ok()) return 1;
    upload_gbs.push_back(bytes / ((NowUs() - t0) * 1e3));

    t0 = NowUs();
    {
      grpc::ClientContext context;
      Ack request;
      request.set_bytes(bytes);
      auto reader = echo_stub->Source(&context, request);
      uint64_t received = 0;
      while (reader->Read(&chunk)) {
        std::memcpy(copy_target.data() + received, chunk.data().data(), chunk.data().size());
        received += chunk.data().size();
      }
      if (!reader->Finish().ok() || received != bytes) return 1;
    }
    bare_down_gbs.push_back(bytes / ((NowUs() - t0) * 1e3));

    t0 = NowUs();
    if (!d.DownloadInto(*big, &downloaded).ok()) return 1;
    download_gbs.push_back(bytes / ((NowUs() - t0) * 1e3));
    // Checked outside the time: the bare stream's bytes are not compared either.
    if (downloaded != payload) return 1;
  }

  const double bare_p50 = Percentile(bare_us, 0.5), bare_p99 = Percentile(bare_us, 0.99);
  const double read_p50 = Percentile(read_us, 0.5), read_p99 = Percentile(read_us, 0.99);
  std::printf("Remote dispatch vs bare gRPC on loopback (%d samples per latency method)\n\n",
              rounds * samples);
  std::printf("%-46s %10s %10s\n", "latency (microseconds)", "p50", "p99");
  std::printf("%-46s %10.1f %10.1f\n", "bare gRPC streaming ping-pong, 4 B", bare_p50, bare_p99);
  std::printf("%-46s %10.1f %10.1f\n", "RemoteDispatch 4 B ranged read (64 MiB buffer)",
              read_p50, read_p99);
  std::printf("%-46s %10.1f %10.1f\n", "RemoteDispatch session ping, 4 B",
              Percentile(ping_us, 0.5), Percentile(ping_us, 0.99));
  const double polled_p50 = Percentile(polled_us, 0.5), polled_p99 = Percentile(polled_us, 0.99);
  std::printf("%-46s %10.1f %10.1f\n", "the ranged read, polling 100 us for its reply",
              polled_p50, polled_p99);
  std::printf("\n%-46s %10s\n", "throughput (GB/s, median)", "");
  const double mem = Median(memcpy_gbs), bare = Median(bare_gbs), up = Median(upload_gbs);
  std::printf("%-46s %10.2f\n", "memcpy", mem);
  std::printf("%-46s %10.2f\n", "bare gRPC client stream, 1 MiB messages", bare);
  std::printf("%-46s %10.2f\n", "RemoteDispatch UploadMany, 1 MiB chunks", up);
  const double bare_down = Median(bare_down_gbs), down = Median(download_gbs);
  std::printf("%-46s %10.2f\n", "bare gRPC server stream, 1 MiB messages", bare_down);
  std::printf("%-46s %10.2f\n", "RemoteDispatch DownloadInto, 1 MiB chunks", down);
  std::printf("\nratios (target in brackets)\n");
  std::printf("ranged read p50 / bare ping-pong p50      %6.2fx  [<= 1.30x] %s\n",
              read_p50 / bare_p50, read_p50 / bare_p50 <= 1.3 ? "met" : "MISSED");
  std::printf("ranged read p99 / bare ping-pong p99      %6.2fx\n", read_p99 / bare_p99);
  std::printf("ranged read polling p50 / bare p50        %6.2fx\n", polled_p50 / bare_p50);
  std::printf("upload / bare stream                      %6.2fx  [>= 0.80x] %s\n", up / bare,
              up / bare >= 0.8 ? "met" : "MISSED");
  std::printf("upload / memcpy                           %6.3fx\n", up / mem);
  std::printf("download / bare stream                    %6.2fx\n", down / bare_down);
  JsonOut& json = JsonOut::Get();
  json.Set("bare_pingpong_p50_us", bare_p50);
  json.Set("bare_pingpong_p99_us", bare_p99);
  json.Set("ranged_read_p50_us", read_p50);
  json.Set("ranged_read_p99_us", read_p99);
  json.Set("ranged_read_over_bare_p50_ratio", read_p50 / bare_p50);
  json.Set("ranged_read_over_bare_p99_ratio", read_p99 / bare_p99);
  json.Set("ranged_read_polling_p50_us", polled_p50);
  json.Set("ranged_read_polling_p99_us", polled_p99);
  json.Set("ranged_read_polling_over_bare_p50_ratio", polled_p50 / bare_p50);
  json.Set("memcpy_gbs", mem);
  json.Set("bare_client_stream_gbs", bare);
  json.Set("upload_gbs", up);
  json.Set("bare_server_stream_gbs", bare_down);
  json.Set("download_gbs", down);
  json.Set("upload_over_bare_stream_ratio", up / bare);
  json.Set("upload_over_memcpy_ratio", up / mem);
  json.Set("download_over_bare_stream_ratio", down / bare_down);

  remote->reset();
  (*daemon)->Shutdown(absl::Seconds(5));
  echo_server->Shutdown();
  if (absl::GetFlag(FLAGS_same_host_mib) > 0 && SameHost(*device) != 0) return 1;
  return JsonOut::Get().Write(absl::GetFlag(FLAGS_json)) ? 0 : 1;
}

}  // namespace
}  // namespace sluice::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return sluice::bench::Main();
}
