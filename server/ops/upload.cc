// Upload: ranges of the session's buffers written from the data of one or more messages, or
// from a span of the client's shared memory.
#include "sluice/server/ops/upload.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_format.h"
#include "sluice/base/status_macros.h"
#include "sluice/proto/codec.h"
#include "sluice/server/ops/op_table.h"

namespace sluice {
namespace {

constexpr uint64_t kHugePage = internal::kHugePageBytes;
static_assert(kUploadBlockBytes % kHugePage == 0);

// The size of an upload's next block, `left` bytes of it still to come: whole huge pages, up
// to kUploadBlockBytes, while a huge page's worth or more is left, then the rest: no block
// holds a huge page it only partly fills.
uint64_t BlockBytes(uint64_t left) {
  return left < kHugePage ? left : std::min(kUploadBlockBytes, left - left % kHugePage);
}

// The pages of `page` bytes that `bytes` bytes from a mapping's start lie in.
uint64_t PagesOf(uint64_t bytes, uint64_t page) { return (bytes + page - 1) / page * page; }

}  // namespace

bool UploadAssembly::Take(v1::SessionRequest& request, std::vector<Job>* jobs,
                          absl::Status refused) {
  const bool is_upload = request.op_case() == v1::SessionRequest::kUpload;
  if (is_upload && discarding_ == request.id() && request.upload().ranges_size() == 0 &&
      !(upload_.has_value() && upload_->id == request.id())) {
    // A later message of an upload that was already answered.
    if (request.upload().last()) discarding_.reset();
    return true;
  }
  if (upload_.has_value() && !(is_upload && request.id() == upload_->id)) {
    End(absl::InvalidArgumentError(
            absl::StrFormat("upload %d was interrupted by request %d before its last chunk",
                            upload_->id, request.id())),
        jobs, /*more_may_follow=*/true);
  }
  if (!is_upload) return false;
  if (!refused.ok()) {
    if (!upload_.has_value()) {
      if (discarding_ == request.id()) discarding_.reset();  // a new upload with this id
      upload_ = Pending{.id = request.id()};
    }
    End(std::move(refused), jobs, /*more_may_follow=*/!request.upload().last());
    return true;
  }
  Accept(request, jobs);
  return true;
}

void UploadAssembly::EndOfInput(std::vector<Job>* jobs) {
  if (upload_.has_value()) {
    End(absl::InvalidArgumentError(absl::StrFormat(
            "upload %d: the stream ended before its last chunk", upload_->id)),
        jobs, /*more_may_follow=*/false);
  }
  discarding_.reset();
}

absl::Status UploadAssembly::CheckFirstMessage(const v1::UploadRequest& first, Pending& up) {
  // Checked here, not only when the job runs, so that no data is held for a doomed upload.
  SessionState& state = *state_;
  if (!state.open_seen || state.open_refused.load()) return SessionState::NotOpenError();
  if (static_cast<uint64_t>(first.ranges_size()) > state.limits.max_ranges) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d ranges in one upload; the limit is %d", first.ranges_size(),
                        state.limits.max_ranges));
  }
  up.ranges = RangesFromProto(first.ranges());
  up.held = up.ranges.capacity() * sizeof(RangeRef);
  up.expected = TotalLength(up.ranges);
  if (up.expected > state.limits.max_request_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("an upload of %d bytes exceeds the per-request limit of %d bytes",
                        up.expected, state.limits.max_request_bytes));
  }
  if (Session* session = state.session.load(); session != nullptr && !state.resuming) {
    RETURN_IF_ERROR(session->CheckUploadRanges(
        up.ranges, [&state](uint64_t handle) { return state.QueuedSize(handle); }));
  }
  // A large upload's ranges are reserved now, its data as it arrives; so are a small upload's
  // many ranges (65536 of one byte each are 1.5 MiB here), and its data with them.
  up.reserved = up.expected > kCheapBytes || up.held > kCheapBytes;
  if (up.reserved) {
    ASSIGN_OR_RETURN(up.hold, state.Transfers().Reserve(up.held, "an upload"));
  }
  return absl::OkStatus();
}

void UploadAssembly::Accept(v1::SessionRequest& request, std::vector<Job>* jobs) {
  v1::UploadRequest& chunk = *request.mutable_upload();
  const bool last = chunk.last();
  if (!upload_.has_value()) {
    if (discarding_ == request.id()) discarding_.reset();  // a new upload with this id
    upload_ = Pending{.id = request.id()};
    if (absl::Status refused = CheckFirstMessage(chunk, *upload_); !refused.ok()) {
      return End(std::move(refused), jobs, /*more_may_follow=*/!last);
    }
  } else if (chunk.ranges_size() > 0) {
    return End(
        absl::InvalidArgumentError("ranges may only appear in the first message of an upload"),
        jobs, !last);
  }
  Pending& up = *upload_;
  if (chunk.has_shared()) {
    // All of it is in the client's shared memory: one message, nothing held here.
    if (!last || !chunk.data().empty() || up.received > 0) {
      return End(absl::InvalidArgumentError(
                     "an upload from shared memory is one message, with no data"),
                 jobs, !last);
    }
    if (chunk.shared().length() != up.expected) {
      return End(absl::InvalidArgumentError(
                     absl::StrFormat("the shared span holds %d bytes; the ranges hold %d",
                                     chunk.shared().length(), up.expected)),
                 jobs, false);
    }
    up.shared = chunk.shared();
    up.received = up.expected;
    up.hold.Release();
    return End(absl::OkStatus(), jobs, /*more_may_follow=*/false);
  }
  const uint64_t n = chunk.data().size();
  const uint32_t chunk_limit = state_->chunk_size.load();
  if (n > chunk_limit) {
    return End(absl::InvalidArgumentError(absl::StrFormat(
                   "a chunk of %d bytes exceeds the negotiated chunk size of %d bytes", n,
                   chunk_limit)),
               jobs, !last);
  }
  if (n > up.expected - up.received) {
    return End(absl::InvalidArgumentError(absl::StrFormat(
                   "upload data exceeds the %d bytes its ranges describe", up.expected)),
               jobs, !last);
  }
  if (n > 0) {
    absl::Status appended = Append(chunk.data(), up);
    // The parsed copy goes now (it is counted no more), whatever became of it.
    std::string().swap(*chunk.mutable_data());
    if (!appended.ok()) return End(std::move(appended), jobs, !last);
  }
  if (last) End(absl::OkStatus(), jobs, /*more_may_follow=*/false);
}

absl::Status UploadAssembly::Append(std::string_view data, Pending& up) {
  // Counts `bytes` more held (reserved from the budget unless the upload is small).
  const auto hold = [&up](uint64_t bytes) -> absl::Status {
    if (up.reserved) RETURN_IF_ERROR(up.hold.Extend(bytes, "an upload"));
    up.held += bytes;
    return absl::OkStatus();
  };
  const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
  for (size_t done = 0; done < data.size();) {
    if (up.blocks.empty() || up.blocks.back().size == up.blocks.back().capacity) {
      // The next block, of what is left of the upload (at most kUploadBlockBytes), and its
      // place in the list (twice over: the list grows by doubling). A small block's bytes are
      // the heap's, counted whole now; a mapping's pages are counted as they are filled.
      Pending::Block block;
      block.capacity = BlockBytes(up.expected - up.received);
      const bool mapped = block.capacity >= kMappedBlockBytes;
      RETURN_IF_ERROR(hold(2 * sizeof(Pending::Block) + (mapped ? 0 : block.capacity)));
      try {
        if (block.capacity == kUploadBlockBytes) {
          // The daemon's, warm from an earlier upload where one is kept: counted whole, as
          // its pages are all backed.
          ASSIGN_OR_RETURN(block.lease, state_->manager->upload_blocks().Take());
          block.page = block.lease.warm() ? block.capacity : kHugePage;
        } else if (mapped) {
          // Huge pages for whole huge pages: written fresh, a small page faults at a time, which
          // a virtual machine makes dear (docs/benchmarks.md).
          const bool huge = block.capacity % kHugePage == 0;
          block.page = huge ? kHugePage : static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
          ASSIGN_OR_RETURN(block.mapped, MappedBuffer::Allocate(block.capacity, huge));
        } else {
          block.heap.reserve(block.capacity);
          // The heap may give a little more than was asked: counted too.
          RETURN_IF_ERROR(hold(block.heap.capacity() - block.capacity));
        }
        up.blocks.push_back(std::move(block));
      } catch (const std::bad_alloc&) {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "the daemon's host has no memory for %d more bytes of an upload", block.capacity));
      }
    }
    Pending::Block& block = up.blocks.back();
    const size_t n = std::min<size_t>(data.size() - done, block.capacity - block.size);
    if (block.capacity >= kMappedBlockBytes) {
      // The pages this piece is the first to reach: counted, then backed in one call.
      const uint64_t first = PagesOf(block.size, block.page);
      const uint64_t last = PagesOf(block.size + n, block.page);
      if (last > first) {
        RETURN_IF_ERROR(hold(last - first));
        if (!block.lease.warm()) internal::PopulatePages(block.bytes() + first, last - first);
      }
      std::memcpy(block.bytes() + block.size, bytes + done, n);
    } else {
      block.heap.append(data.substr(done, n));
    }
    block.size += n;
    done += n;
    up.received += n;
  }
  return absl::OkStatus();
}

void UploadAssembly::End(absl::Status error, std::vector<Job>* jobs, bool more_may_follow) {
  Pending up = std::move(*upload_);
  upload_.reset();
  if (error.ok() && up.received != up.expected) {
    error = absl::InvalidArgumentError(absl::StrFormat(
        "upload ended after %d of the %d bytes its ranges describe", up.received, up.expected));
  }
  if (!error.ok()) {
    // Nothing of it will be written: its data and reservation go now, its reply is queued
    // now, and its later messages are dropped as they come.
    if (more_may_follow) discarding_ = up.id;
    jobs->push_back(RefusalJob(up.id, v1::SessionRequest::kUpload, std::move(error)));
    return;
  }
  Job job = NewJob(*state_, *FindOp(v1::SessionRequest::kUpload), up.id);
  job.cheap = up.expected <= kCheapBytes;
  job.staged = up.held;  // (of shared memory, which is the client's, only its ranges)
  // Its reservation waits with it; what a small upload holds is charged now.
  job.hold = std::move(up.hold);
  if (job.hold.bytes() < job.staged) job.hold = state_->Transfers().Charge(job.staged);
  job.run = [state = state_, up = std::move(up)](Responses* out) { Write(*state, up, out); };
  jobs->push_back(std::move(job));
}

void UploadAssembly::Write(SessionState& state, const Pending& upload, Responses* out) {
  if (absl::Status open = state.RequireOpen(); !open.ok()) {
    return SessionState::Reply(upload.id, open, out);
  }
  Session& session = state.ticket->session();
  absl::Status status;
  if (upload.shared.has_value()) {
    // The region stays mapped while this runs, even if its client attaches another meanwhile.
    std::shared_ptr<SharedRegion> region;
    absl::StatusOr<absl::Span<uint8_t>> data =
        state.SharedSpanOf(*upload.shared, upload.expected, &region);
    if (!data.ok()) return SessionState::Reply(upload.id, data.status(), out);
    uint64_t at = 0;
    status = session.Write(upload.ranges,
                           [&](size_t, uint64_t, uint64_t length) -> absl::Span<const uint8_t> {
                             const absl::Span<const uint8_t> piece = data->subspan(at, length);
                             at += piece.size();
                             return piece;
                           });
  } else {
    // The ranges' bytes, concatenated, are the blocks': the session asks for them in order.
    size_t block = 0;
    uint64_t block_offset = 0;
    status = session.Write(
        upload.ranges, [&](size_t, uint64_t, uint64_t length) -> absl::Span<const uint8_t> {
          if (block == upload.blocks.size()) return {};
          const Pending::Block& b = upload.blocks[block];
          const uint64_t n = std::min<uint64_t>(length, b.size - block_offset);
          const absl::Span<const uint8_t> piece(b.data() + block_offset, n);
          block_offset += n;
          if (block_offset == b.size) {
            ++block;
            block_offset = 0;
          }
          return piece;
        });
  }
  if (status.ok()) state.stats.bytes_up += upload.expected;
  SessionState::Reply(upload.id, status, out);
}

}  // namespace sluice
