// The C ABI over the client library (client/c/sluice.h): each entry point checks its pointers
// and sizes, converts its arguments to the C++ API's types, calls it, and turns what comes back
// into a sluice_status. No exception crosses it (an allocation that fails is INTERNAL).
#include "sluice/client/c/sluice.h"

#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "sluice/client/local_dispatch.h"
#include "sluice/client/remote_dispatch.h"
#include "sluice/client/resident_dispatch.h"
#include "sluice/kernels/kernel_args.h"

struct sluice_status {
  sluice_code code;
  std::string message;
};

struct sluice_dispatch {
  std::unique_ptr<sluice::ResidentDispatch> impl;
  std::string backend_id;
  std::string backend_version;
};

namespace sluice {

// Resources as the C ABI carries them: the issuing instance and its id.
struct CResources {
  static Resource From(const sluice_resource& r) { return Resource(r.owner, r.id); }
  static sluice_resource To(const Resource& r) { return {r.owner(), r.id()}; }
};

namespace {

static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) == SLUICE_UNAUTHENTICATED &&
                  static_cast<int>(absl::StatusCode::kNotFound) == SLUICE_NOT_FOUND &&
                  static_cast<int>(absl::StatusCode::kOutOfRange) == SLUICE_OUT_OF_RANGE,
              "the C codes are absl's");

// What a failure returns where there is no memory for its status (NULL would say success):
// never freed (sluice_status_free passes it by).
sluice_status* const kNoMemoryForStatus =
    new sluice_status{SLUICE_INTERNAL, "the Sluice library ran out of memory"};

sluice_status* ToC(const absl::Status& status) {
  if (status.ok()) return nullptr;
  try {
    return new sluice_status{static_cast<sluice_code>(status.code()),
                             std::string(status.message())};
  } catch (...) {
    return kNoMemoryForStatus;
  }
}

sluice_status* Invalid(const std::string& message) {
  return ToC(absl::InvalidArgumentError(message));
}

// Runs `body`, turning an exception (memory the library could not get) into INTERNAL.
template <class F>
sluice_status* Guard(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return ToC(absl::InternalError("the Sluice library ran out of memory"));
  } catch (const std::exception& e) {
    return ToC(absl::InternalError(absl::StrFormat("the Sluice library failed: %s", e.what())));
  } catch (...) {
    return ToC(absl::InternalError("the Sluice library failed"));
  }
}

// A null pointer where `count` elements are needed.
bool Missing(const void* p, size_t count) { return p == nullptr && count != 0; }

std::string Str(const char* s) { return s == nullptr ? std::string() : std::string(s); }

sluice_status* Open(std::unique_ptr<ResidentDispatch> impl, sluice_dispatch** out) {
  auto* d = new sluice_dispatch;
  d->backend_id = std::string(impl->backend_id());
  d->backend_version = std::string(impl->backend_version());
  d->impl = std::move(impl);
  *out = d;
  return nullptr;
}

// A C step converted: what a Step points to. Kept in a std::deque, whose elements stay where
// they are as more are added.
struct HeldStep {
  Program program;
  std::vector<Resource> resources;
};

// The C steps as the C++ API's (appended to `out`), what they point to held in `held`.
sluice_status* ToSteps(const sluice_step* steps, size_t count, const char* what,
                       std::deque<HeldStep>* held, std::vector<Step>* out) {
  if (Missing(steps, count)) return Invalid(absl::StrFormat("%s: steps is null", what));
  for (size_t i = 0; i < count; ++i) {
    const sluice_step& s = steps[i];
    const sluice_program* p = s.program;
    if (p == nullptr || p->kernel == nullptr) {
      return Invalid(absl::StrFormat("%s step %d: no program or no kernel name", what, i));
    }
    if (Missing(p->params, p->param_count)) {
      return Invalid(absl::StrFormat("%s step %d: params is null", what, i));
    }
    if (Missing(s.resources, s.resource_count)) {
      return Invalid(absl::StrFormat("%s step %d: resources is null", what, i));
    }
    // Counted before anything is copied: no kernel takes more.
    if (p->param_count > kMaxParams) {
      return Invalid(absl::StrFormat("%s step %d: %d params; a kernel takes at most %d", what,
                                     i, p->param_count, kMaxParams));
    }
    if (s.resource_count > kMaxBindings) {
      return Invalid(absl::StrFormat("%s step %d: %d resources; a kernel binds at most %d", what,
                                     i, s.resource_count, kMaxBindings));
    }
    HeldStep& h = held->emplace_back();
    h.program = Program{p->kernel, std::vector<uint64_t>(p->params, p->params + p->param_count),
                        p->version};
    h.resources.reserve(s.resource_count);
    for (size_t r = 0; r < s.resource_count; ++r) {
      h.resources.push_back(CResources::From(s.resources[r]));
    }
    std::optional<Grid> grid;
    if (s.grid != nullptr) grid = Grid{s.grid[0], s.grid[1], s.grid[2]};
    out->push_back(Step{&h.program, h.resources, grid});
  }
  return nullptr;
}

// The C ranges and outputs as the C++ API's.
sluice_status* ToReads(const sluice_read_range* ranges, size_t count, uint8_t* const* outputs,
                       std::vector<ReadRange>* reads, std::vector<absl::Span<uint8_t>>* spans) {
  if (Missing(ranges, count)) return Invalid("ranges is null");
  if (Missing(outputs, count)) return Invalid("outputs is null");
  reads->reserve(count);
  spans->reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const sluice_read_range& r = ranges[i];
    if (r.offset > SIZE_MAX || r.length > SIZE_MAX) {
      return ToC(absl::OutOfRangeError(absl::StrFormat(
          "range %d: [%d, +%d) does not fit this host's sizes", i, r.offset, r.length)));
    }
    if (outputs[i] == nullptr && r.length != 0) {
      return Invalid(absl::StrFormat("output %d is null", i));
    }
    reads->push_back(ReadRange{CResources::From(r.resource), static_cast<size_t>(r.offset),
                               static_cast<size_t>(r.length)});
    spans->push_back(absl::Span<uint8_t>(outputs[i], static_cast<size_t>(r.length)));
  }
  return nullptr;
}

sluice_status* Uploads(sluice_dispatch* d, const sluice_upload_range* uploads, size_t count,
                       bool at_offsets) {
  if (d == nullptr) return Invalid("the dispatcher is null");
  if (Missing(uploads, count)) return Invalid("uploads is null");
  return Guard([&]() -> sluice_status* {
    std::vector<RangedUpload> ranged;
    std::vector<BufferUpload> whole;
    for (size_t i = 0; i < count; ++i) {
      const sluice_upload_range& u = uploads[i];
      if (Missing(u.bytes, u.length)) return Invalid(absl::StrFormat("upload %d: bytes is null", i));
      const absl::Span<const uint8_t> bytes(u.bytes, u.length);
      if (at_offsets) {
        if (u.offset > SIZE_MAX) {
          return ToC(absl::OutOfRangeError(absl::StrFormat("upload %d: offset %d", i, u.offset)));
        }
        ranged.push_back(RangedUpload{CResources::From(u.resource),
                                      static_cast<size_t>(u.offset), bytes});
      } else {
        if (u.offset != 0) {
          return Invalid(absl::StrFormat(
              "upload %d: offset %d; sluice_upload_many writes at offset 0 "
              "(sluice_upload_at_many writes at offsets)",
              i, u.offset));
        }
        whole.push_back(BufferUpload{CResources::From(u.resource), bytes});
      }
    }
    return ToC(at_offsets ? d->impl->UploadAtMany(ranged) : d->impl->UploadMany(whole));
  });
}

}  // namespace
}  // namespace sluice

using sluice::CResources;
using sluice::Guard;
using sluice::Invalid;
using sluice::Missing;
using sluice::ToC;

extern "C" {

uint32_t sluice_abi_version(void) { return SLUICE_C_ABI_VERSION; }

sluice_code sluice_status_code(const sluice_status* status) {
  return status == nullptr ? SLUICE_OK : status->code;
}

const char* sluice_status_message(const sluice_status* status) {
  return status == nullptr ? "" : status->message.c_str();
}

void sluice_status_free(sluice_status* status) {
  if (status != sluice::kNoMemoryForStatus) delete status;
}

const char* sluice_code_name(sluice_code code) {
  switch (code) {
    case SLUICE_OK: return "OK";
    case SLUICE_CANCELLED: return "CANCELLED";
    case SLUICE_UNKNOWN: return "UNKNOWN";
    case SLUICE_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case SLUICE_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case SLUICE_NOT_FOUND: return "NOT_FOUND";
    case SLUICE_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case SLUICE_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case SLUICE_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case SLUICE_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case SLUICE_ABORTED: return "ABORTED";
    case SLUICE_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case SLUICE_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case SLUICE_INTERNAL: return "INTERNAL";
    case SLUICE_UNAVAILABLE: return "UNAVAILABLE";
    case SLUICE_DATA_LOSS: return "DATA_LOSS";
    case SLUICE_UNAUTHENTICATED: return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}

sluice_status* sluice_remote_connect(const sluice_remote_options* options, size_t options_size,
                                     sluice_dispatch** out) {
  if (out == nullptr) return Invalid("out is null");
  *out = nullptr;
  if (options == nullptr) return Invalid("options is null");
  if (options_size < sizeof(sluice_remote_options)) {
    return Invalid(absl::StrFormat(
        "options_size is %d; this library's sluice_remote_options has %d bytes (give "
        "sizeof(sluice_remote_options))",
        options_size, sizeof(sluice_remote_options)));
  }
  if (options->target == nullptr || options->target[0] == '\0') {
    return Invalid("options.target is empty: give the daemon's host:port or unix:PATH");
  }
  return Guard([&]() -> sluice_status* {
    sluice::RemoteDispatch::Options o;
    o.target = options->target;
    if (options->client_name != nullptr && options->client_name[0] != '\0') {
      o.client_name = options->client_name;
    }
    o.credentials.token = sluice::Str(options->token);
    o.credentials.tls = options->tls != 0;
    o.credentials.tls_ca = sluice::Str(options->tls_ca);
    o.credentials.tls_cert = sluice::Str(options->tls_cert);
    o.credentials.tls_key = sluice::Str(options->tls_key);
    o.credentials.tls_server_name = sluice::Str(options->tls_server_name);
    o.resumable = options->not_resumable == 0;
    o.pipelined = options->pipelined != 0;
    o.chunk_size = options->chunk_size;
    if (options->connect_timeout_ms != 0) {
      o.connect_timeout = absl::Milliseconds(options->connect_timeout_ms);
    }
    if (options->call_timeout_ms != 0) o.call_timeout = absl::Milliseconds(options->call_timeout_ms);
    absl::StatusOr<std::unique_ptr<sluice::RemoteDispatch>> d = sluice::RemoteDispatch::Connect(o);
    if (!d.ok()) return ToC(d.status());
    return sluice::Open(*std::move(d), out);
  });
}

sluice_status* sluice_local_open(sluice_dispatch** out) {
  if (out == nullptr) return Invalid("out is null");
  *out = nullptr;
  return Guard([&]() -> sluice_status* {
    absl::StatusOr<std::unique_ptr<sluice::LocalDispatch>> d = sluice::LocalDispatch::CreateCpu();
    if (!d.ok()) return ToC(d.status());
    return sluice::Open(*std::move(d), out);
  });
}

void sluice_dispatch_close(sluice_dispatch* dispatch) { delete dispatch; }

const char* sluice_backend_id(const sluice_dispatch* dispatch) {
  return dispatch == nullptr ? "" : dispatch->backend_id.c_str();
}

const char* sluice_backend_version(const sluice_dispatch* dispatch) {
  return dispatch == nullptr ? "" : dispatch->backend_version.c_str();
}

sluice_status* sluice_allocate(sluice_dispatch* dispatch, uint64_t byte_len,
                               sluice_resource* out) {
  if (dispatch == nullptr) return Invalid("the dispatcher is null");
  if (out == nullptr) return Invalid("out is null");
  if (byte_len > SIZE_MAX) {
    return ToC(absl::ResourceExhaustedError(
        absl::StrFormat("%d bytes do not fit this host's sizes", byte_len)));
  }
  return Guard([&]() -> sluice_status* {
    absl::StatusOr<sluice::Resource> r = dispatch->impl->Allocate(static_cast<size_t>(byte_len));
    if (!r.ok()) return ToC(r.status());
    *out = CResources::To(*r);
    return nullptr;
  });
}

sluice_status* sluice_free(sluice_dispatch* dispatch, sluice_resource resource) {
  if (dispatch == nullptr) return Invalid("the dispatcher is null");
  return Guard([&] { return ToC(dispatch->impl->Free(CResources::From(resource))); });
}

sluice_status* sluice_upload(sluice_dispatch* dispatch, sluice_resource resource,
                             const uint8_t* bytes, size_t length) {
  if (dispatch == nullptr) return Invalid("the dispatcher is null");
  if (Missing(bytes, length)) return Invalid("bytes is null");
  return Guard([&] {
    return ToC(dispatch->impl->Upload(CResources::From(resource), {bytes, length}));
  });
}

sluice_status* sluice_upload_many(sluice_dispatch* dispatch, const sluice_upload_range* uploads,
                                  size_t count) {
  return sluice::Uploads(dispatch, uploads, count, /*at_offsets=*/false);
}

sluice_status* sluice_upload_at_many(sluice_dispatch* dispatch,
                                     const sluice_upload_range* uploads, size_t count) {
  return sluice::Uploads(dispatch, uploads, count, /*at_offsets=*/true);
}

sluice_status* sluice_download(sluice_dispatch* dispatch, sluice_resource resource,
                               uint8_t* output, size_t capacity, size_t* size) {
  if (dispatch == nullptr) return Invalid("the dispatcher is null");
  if (size == nullptr) return Invalid("size is null");
  if (Missing(output, capacity)) return Invalid("output is null");
  return Guard([&]() -> sluice_status* {
    std::vector<uint8_t> bytes;
    absl::Status status = dispatch->impl->DownloadInto(CResources::From(resource), &bytes);
    if (!status.ok()) return ToC(status);
    *size = bytes.size();
    if (bytes.size() > capacity) {
      return Invalid(absl::StrFormat(
          "the buffer holds %d bytes; the output has room for %d (call again with *size)",
          bytes.size(), capacity));
    }
    if (!bytes.empty()) std::memcpy(output, bytes.data(), bytes.size());
    return nullptr;
  });
}

sluice_status* sluice_download_range(sluice_dispatch* dispatch, sluice_resource resource,
                                     uint64_t offset, uint64_t length, uint8_t* output) {
  const sluice_read_range range = {resource, offset, length};
  return sluice_download_ranges(dispatch, &range, 1, &output);
}

sluice_status* sluice_download_ranges(sluice_dispatch* dispatch, const sluice_read_range* ranges,
                                      size_t count, uint8_t* const* outputs) {
  if (dispatch == nullptr) return Invalid("the dispatcher is null");
  return Guard([&]() -> sluice_status* {
    std::vector<sluice::ReadRange> reads;
    std::vector<absl::Span<uint8_t>> spans;
    if (sluice_status* bad = sluice::ToReads(ranges, count, outputs, &reads, &spans)) return bad;
    return ToC(dispatch->impl->DownloadRangesIntoSpans(reads, spans));
  });
}

sluice_status* sluice_dispatch_program(sluice_dispatch* dispatch, const sluice_program* program,
                                       const sluice_resource* resources, size_t resource_count,
                                       const uint32_t* grid) {
  if (dispatch == nullptr) return Invalid("the dispatcher is null");
  return Guard([&]() -> sluice_status* {
    const sluice_step step = {program, resources, resource_count, grid};
    std::deque<sluice::HeldStep> held;
    std::vector<sluice::Step> steps;
    if (sluice_status* bad = sluice::ToSteps(&step, 1, "the", &held, &steps)) return bad;
    return ToC(dispatch->impl->Dispatch(*steps[0].program, steps[0].resources, steps[0].grid));
  });
}

sluice_status* sluice_dispatch_sequence(sluice_dispatch* dispatch, const sluice_step* steps,
                                        size_t step_count, const sluice_read_range* ranges,
                                        size_t range_count, uint8_t* const* outputs) {
  return sluice_dispatch_repeated_sequence(dispatch, steps, step_count, nullptr, 0, 0, ranges,
                                           range_count, outputs);
}

sluice_status* sluice_dispatch_repeated_sequence(sluice_dispatch* dispatch,
                                                 const sluice_step* prefix, size_t prefix_count,
                                                 const sluice_step* repeated,
                                                 size_t repeated_count, uint32_t repeat_count,
                                                 const sluice_read_range* ranges,
                                                 size_t range_count, uint8_t* const* outputs) {
  if (dispatch == nullptr) return Invalid("the dispatcher is null");
  return Guard([&]() -> sluice_status* {
    std::deque<sluice::HeldStep> held;
    std::vector<sluice::Step> first;
    std::vector<sluice::Step> again;
    if (sluice_status* bad = sluice::ToSteps(prefix, prefix_count, "prefix", &held, &first)) {
      return bad;
    }
    if (sluice_status* bad =
            sluice::ToSteps(repeated, repeated_count, "repeated", &held, &again)) {
      return bad;
    }
    std::vector<sluice::ReadRange> reads;
    std::vector<absl::Span<uint8_t>> spans;
    if (sluice_status* bad = sluice::ToReads(ranges, range_count, outputs, &reads, &spans)) {
      return bad;
    }
    return ToC(dispatch->impl->DispatchRepeatedSequenceReadRangesIntoSpans(first, again,
                                                                          repeat_count, reads,
                                                                          spans));
  });
}

void sluice_cancel(sluice_dispatch* dispatch) {
  if (dispatch != nullptr) dispatch->impl->Cancel();
}

}  // extern "C"
