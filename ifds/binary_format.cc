#include "sluice/ifds/binary_format.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "sluice/base/mapped_buffer.h"
#include "sluice/base/mapped_file.h"
#include "sluice/base/status_macros.h"
#include "sluice/base/thread_pool.h"
#include "sluice/ifds/text_format.h"

namespace sluice::ifds {
namespace {

constexpr uint32_t kVersion = 1;
constexpr uint32_t kHasNames = 1;

constexpr size_t kFlowsPerPiece = internal::kBinaryFlowsPerPiece;

// Calls read(first, last) over ranges that cover [0, pieces), on every core where there are
// pieces for more than one; on this thread alone if the system gives no threads.
void OnCores(size_t pieces, absl::FunctionRef<void(uint64_t, uint64_t)> read) {
  if (pieces > 1) {
    std::optional<ThreadPool> pool;
    try {
      pool.emplace();
    } catch (const std::system_error&) {
      // Read here.
    }
    if (pool.has_value()) return pool->ParallelFor(pieces, 1, read);
  }
  read(0, pieces);
}

enum Count {
  kFacts, kNodes, kProcedures, kFlows, kEdges, kCallSites, kCallees, kSeeds,
  kKills, kGens, kPairs, kNumCounts
};

void PutU32(std::string* out, uint32_t v) {
  char b[4];
  std::memcpy(b, &v, 4);  // the format is little-endian, like every machine Sluice runs on
  out->append(b, 4);
}
void PutU64(std::string* out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, 8);
  out->append(b, 8);
}
void PutName(std::string* out, std::string_view name) {
  PutU32(out, static_cast<uint32_t>(name.size()));
  out->append(name);
}

// A bounds-checked cursor over the input.
class Reader {
 public:
  Reader(std::string_view bytes, std::string_view file) : bytes_(bytes), file_(file) {}
  absl::Status Error(const std::string& what) const { return ErrorAt(position_, what); }
  // An error found at byte `at`, read before.
  absl::Status ErrorAt(size_t at, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s: byte %d: %s", file_, at, what));
  }
  size_t position() const { return position_; }
  bool U32(uint32_t* v) { return Raw(v, 4); }
  bool U64(uint64_t* v) { return Raw(v, 8); }
  // Fills `out` with the next words, checked once: false (nothing read) if there are too few.
  bool U32s(absl::Span<uint32_t> out) {
    if (out.size() > left() / 4) return false;
    if (out.empty()) return true;  // (an empty span's data may be null, which memcpy may not take)
    std::memcpy(out.data(), bytes_.data() + position_, 4 * out.size());
    position_ += 4 * out.size();
    return true;
  }
  bool Bytes(size_t n, std::string_view* out) {
    if (n > bytes_.size() - position_) return false;
    *out = bytes_.substr(position_, n);
    position_ += n;
    return true;
  }
  uint64_t left() const { return bytes_.size() - position_; }

 private:
  bool Raw(void* v, size_t n) {
    if (n > bytes_.size() - position_) return false;
    std::memcpy(v, bytes_.data() + position_, n);
    position_ += n;
    return true;
  }
  std::string_view bytes_;
  std::string_view file_;
  size_t position_ = 0;
};

}  // namespace

std::string WriteBinary(const Problem& p, bool names) {
  std::string out(kBinaryMagic);
  PutU32(&out, kVersion);
  PutU32(&out, names ? kHasNames : 0);
  const uint64_t callees = p.callees.size();
  const uint64_t kills = p.flows.kill_count(), gens = p.flows.gen_count(),
                 pairs = p.flows.pair_count();
  for (uint64_t v : {uint64_t{p.fact_names.size()}, uint64_t{p.node_names.size()},
                     uint64_t{p.procedures.size()}, uint64_t{p.flows.size()},
                     uint64_t{p.edges.size()}, uint64_t{p.call_sites.size()}, callees,
                     uint64_t{p.seeds.size()}, kills, gens, pairs}) {
    PutU64(&out, v);
  }
  for (uint32_t q : p.node_procedure) PutU32(&out, q);
  for (const Procedure& q : p.procedures) {
    PutU32(&out, q.start);
    PutU32(&out, q.exit);
  }
  for (const FlowView f : p.flows) {
    PutU32(&out, f.identity ? 1 : 0);
    PutU32(&out, static_cast<uint32_t>(f.kills.size()));
    PutU32(&out, static_cast<uint32_t>(f.gens.size()));
    PutU32(&out, static_cast<uint32_t>(f.pairs.size()));
  }
  for (const FlowView f : p.flows) {
    for (uint32_t d : f.kills) PutU32(&out, d);
    for (uint32_t d : f.gens) PutU32(&out, d);
    for (const auto& [a, b] : f.pairs) {
      PutU32(&out, a);
      PutU32(&out, b);
    }
  }
  for (const Edge& e : p.edges) {
    PutU32(&out, e.from);
    PutU32(&out, e.to);
    PutU32(&out, e.flow);
  }
  for (size_t site = 0; site < p.call_sites.size(); ++site) {
    const CallSite& c = p.call_sites[site];
    PutU32(&out, c.call);
    PutU32(&out, c.return_site);
    PutU32(&out, c.call_to_return_flow);
    PutU32(&out, static_cast<uint32_t>(p.CalleesOf(site).size()));
  }
  for (const Callee& callee : p.callees) {
    PutU32(&out, callee.procedure);
    PutU32(&out, callee.call_flow);
    PutU32(&out, callee.return_flow);
  }
  for (const auto& [n, d] : p.seeds) {
    PutU32(&out, n);
    PutU32(&out, d);
  }
  if (names) {
    for (const std::string& n : p.fact_names) PutName(&out, n);
    for (const std::string_view n : p.node_names) PutName(&out, n);
    for (const Procedure& q : p.procedures) PutName(&out, q.name);
  }
  return out;
}

absl::StatusOr<Problem> ParseBinary(std::string_view bytes, std::string_view filename) {
  Reader in(bytes, filename);
  std::string_view magic;
  if (!in.Bytes(kBinaryMagic.size(), &magic) || magic != kBinaryMagic) {
    return in.Error("not a Sluice binary IFDS file (bad magic)");
  }
  uint32_t version = 0, flags = 0;
  if (!in.U32(&version) || !in.U32(&flags)) return in.Error("truncated header");
  if (version != kVersion) {
    return in.Error(absl::StrFormat("format version %d; this reader knows %d", version, kVersion));
  }
  if ((flags & ~kHasNames) != 0) return in.Error("unknown header flags");
  uint64_t n[kNumCounts];
  for (uint64_t& c : n) {
    if (!in.U64(&c)) return in.Error("truncated header");
  }
  if (n[kFacts] == 0 || n[kFacts] > kMaxFacts) return in.Error("fact count out of range");
  if (n[kNodes] > kMaxNodes) return in.Error("node count out of range");
  // Every array element takes at least 4 bytes: no count may promise more than the file holds,
  // which also keeps every product below 2^64. Facts are no array (width 0: without names they
  // take no bytes at all); their count is bounded above.
  const uint64_t words = in.left() / 4;
  uint64_t needed = 0;
  const uint64_t widths[kNumCounts] = {0, 1, 2, 4, 3, 4, 3, 2, 1, 1, 2};
  for (int k = 0; k < kNumCounts; ++k) {
    if (widths[k] != 0 && n[k] > words) {
      return in.Error("a count promises more data than the file holds");
    }
    needed += n[k] * widths[k];  // each term <= 4 * words, and `needed` stays <= words
    if (needed > words) return in.Error("the arrays the header promises are truncated");
  }

  Problem p;
  p.node_procedure.resize(n[kNodes]);
  in.U32s(absl::MakeSpan(p.node_procedure));
  p.procedures.resize(n[kProcedures]);
  for (Procedure& q : p.procedures) {
    in.U32(&q.start);
    in.U32(&q.exit);
  }
  // The flows' headers are checked first (flags, and sizes against the totals, which the
  // file's size bounds), noting where each piece of kFlowsPerPiece flows has its lists begin.
  // Then the pieces' lists are read into the problem's table in place, a piece at a time on
  // every core, each piece checked there as Validate checks flows.
  const size_t flow_count = n[kFlows];
  const size_t headers_at = in.position();
  std::string_view headers;
  if (!in.Bytes(16 * flow_count, &headers)) return in.Error("truncated flow headers");
  std::vector<FlowTable::Begins> piece_begins;
  piece_begins.reserve(flow_count / kFlowsPerPiece + 1);
  uint64_t kills = 0, gens = 0, pairs = 0;
  for (size_t f = 0; f < flow_count; ++f) {
    if (f % kFlowsPerPiece == 0) piece_begins.push_back({kills, gens, pairs});
    uint32_t header[4];
    std::memcpy(header, headers.data() + 16 * f, sizeof(header));
    if (header[0] > 1) {
      return in.ErrorAt(headers_at + 16 * f + 4, "flow identity flag must be 0 or 1");
    }
    kills += header[1];
    gens += header[2];
    pairs += header[3];
  }
  if (kills != n[kKills] || gens != n[kGens] || pairs != n[kPairs]) {
    return in.Error("flow sizes disagree with the header's totals");
  }
  std::string_view lists;
  if (!in.Bytes(4 * (kills + gens) + 8 * pairs, &lists)) return in.Error("truncated flows");
  p.flows.Resize(flow_count, kills, gens, pairs);
  std::vector<uint8_t> piece_valid(piece_begins.size(), 0);
  const auto read_pieces = [&](uint64_t first_piece, uint64_t last_piece) {
    for (uint64_t k = first_piece; k < last_piece; ++k) {
      FlowTable::Begins at = piece_begins[k];
      const char* from = lists.data() + 4 * (at.kills + at.gens) + 8 * at.pairs;
      const size_t first = k * kFlowsPerPiece;
      const size_t last = std::min(flow_count, first + kFlowsPerPiece);
      for (size_t f = first; f < last; ++f) {
        uint32_t header[4];
        std::memcpy(header, headers.data() + 16 * f, sizeof(header));
        const FlowTable::Lists to =
            p.flows.Fill(f, header[0] == 1, at, header[1], header[2], header[3]);
        for (const absl::Span<uint32_t> list : {to.kills, to.gens}) {
          if (list.empty()) continue;  // (its data may be null, which memcpy may not take)
          std::memcpy(list.data(), from, 4 * list.size());
          from += 4 * list.size();
        }
        for (uint32_t& word : to.pairs) {
          uint32_t fact[2];
          std::memcpy(fact, from, sizeof(fact));
          word = PackPair(fact[0], fact[1]);
          from += sizeof(fact);
        }
        at.kills += header[1];
        at.gens += header[2];
        at.pairs += header[3];
      }
      piece_valid[k] = ValidateFlows(p.flows, n[kFacts], first, last).ok() ? 1 : 0;
    }
  };
  OnCores(piece_begins.size(), read_pieces);
  const bool flows_valid =
      std::all_of(piece_valid.begin(), piece_valid.end(), [](uint8_t v) { return v != 0; });
  p.edges.resize(n[kEdges]);
  for (Edge& e : p.edges) {
    in.U32(&e.from);
    in.U32(&e.to);
    in.U32(&e.flow);
  }
  p.call_sites.resize(n[kCallSites]);
  uint64_t callees = 0;
  for (size_t c = 0; c < p.call_sites.size(); ++c) {
    uint32_t count = 0;
    in.U32(&p.call_sites[c].call);
    in.U32(&p.call_sites[c].return_site);
    in.U32(&p.call_sites[c].call_to_return_flow);
    in.U32(&count);
    callees += count;
    // Past kMaxProblemCallees the file is refused below: the ends are not read.
    p.call_sites[c].callees_end = static_cast<uint32_t>(std::min(callees, kMaxProblemCallees));
  }
  if (callees != n[kCallees]) return in.Error("callee counts disagree with the header's total");
  if (callees > kMaxProblemCallees) {
    return in.Error(absl::StrFormat("%d callees; a problem has at most %d", callees,
                                    kMaxProblemCallees));
  }
  p.callees.resize(callees);
  for (Callee& callee : p.callees) {
    in.U32(&callee.procedure);
    in.U32(&callee.call_flow);
    in.U32(&callee.return_flow);
  }
  p.seeds.resize(n[kSeeds]);
  for (auto& [node, fact] : p.seeds) {
    in.U32(&node);
    in.U32(&fact);
  }
  if ((flags & kHasNames) != 0) {
    const auto read_names = [&](uint64_t count, auto* names) -> absl::Status {
      names->reserve(count);
      // (Abseil's string hash: std::string_view keys would take std::hash, slower.)
      absl::flat_hash_set<absl::string_view> seen;
      seen.reserve(count);
      // Read a batch at a time, each batch's places in the set (far apart, past the caches)
      // fetched before any is added; each name checked in order, its error placed where it
      // ends, as if read alone.
      constexpr size_t kBatch = 16;
      std::array<absl::string_view, kBatch> batch;
      std::array<size_t, kBatch> ends;
      for (uint64_t first = 0; first < count; first += kBatch) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(kBatch, count - first));
        size_t read = 0;
        for (; read < want; ++read) {
          uint32_t length = 0;
          std::string_view name;
          if (!in.U32(&length) || !in.Bytes(length, &name)) break;
          batch[read] = absl::string_view(name.data(), name.size());
          ends[read] = in.position();
          seen.prefetch(batch[read]);
        }
        for (size_t k = 0; k < read; ++k) {
          const std::string_view name(batch[k].data(), batch[k].size());
          if (!IsValidName(name)) {
            return in.ErrorAt(ends[k], "a name holds characters names may not");
          }
          if (!seen.insert(batch[k]).second) {
            return in.ErrorAt(ends[k], absl::StrFormat("the name '%s' is used twice", name));
          }
          names->emplace_back(name);
        }
        if (read < want) return in.Error("truncated names");
      }
      return absl::OkStatus();
    };
    std::vector<std::string> procedure_names;
    if (absl::Status s = read_names(n[kFacts], &p.fact_names); !s.ok()) return s;
    if (absl::Status s = read_names(n[kNodes], &p.node_names); !s.ok()) return s;
    if (absl::Status s = read_names(n[kProcedures], &procedure_names); !s.ok()) return s;
    for (size_t q = 0; q < p.procedures.size(); ++q) p.procedures[q].name = procedure_names[q];
  } else {
    p.fact_names.push_back("0");
    for (uint64_t d = 1; d < n[kFacts]; ++d) p.fact_names.push_back(absl::StrCat("f", d));
    for (uint64_t node = 0; node < n[kNodes]; ++node) {
      p.node_names.push_back(absl::StrCat("n", node));
    }
    for (size_t q = 0; q < p.procedures.size(); ++q) p.procedures[q].name = absl::StrCat("p", q);
  }
  if (in.left() != 0) return in.Error("trailing bytes after the problem");
  // Flows already checked are not read again; where one failed, Validate reads them all, to
  // give the error it gives for the problem as a whole.
  if (absl::Status s = Validate(p, flows_valid ? p.flows.size() : 0); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s", filename, s.message()));
  }
  return p;
}

namespace {

// The first piece of a file holds a NUL byte without the binary magic: neither format.
bool NeitherFormat(std::string_view first_piece) {
  return first_piece.compare(0, kBinaryMagic.size(), kBinaryMagic) != 0 &&
         first_piece.find('\0') != std::string_view::npos;
}

absl::Status NeitherFormatError(const std::string& path) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: neither format: binary data without the binary format's magic", path));
}

constexpr size_t kPiece = size_t{1} << 20;

// Reads `length` bytes of the file `fd` from `offset` into `data`; the bytes read: fewer at the
// file's end, or where reading fails (`failed`, if given, then says so).
size_t ReadRange(int fd, char* data, size_t offset, size_t length, char* failed = nullptr) {
  size_t got = 0;
  while (got < length) {
    const ssize_t n = pread(fd, data + got, std::min<size_t>(length - got, 1u << 30),
                            static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0 && failed != nullptr) *failed = 1;
      break;
    }
    got += static_cast<size_t>(n);
  }
  return got;
}

// Reads bytes [from, size) of the file `fd` into `data` at the same offsets (the bytes before
// are read already): a large file in ranges on every core (the copies out of the page cache,
// and the faults that give `data` its pages, split between them). Where the file ends: `size`,
// or less where it shrank while it was read (what is there is then the file, up to the first
// range that came up short).
// The next piece of a stream (a pipe) into `data`, kPiece bytes or fewer where it ends: read
// whole, for a pipe gives what it holds at the moment.
absl::StatusOr<size_t> ReadPiece(int fd, char* data, const std::string& path) {
  size_t got = 0;
  while (got < kPiece) {
    const ssize_t n = read(fd, data + got, kPiece - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::DataLossError(absl::StrFormat("%s: reading the file failed", path));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

absl::StatusOr<size_t> ReadAt(int fd, char* data, size_t from, size_t size) {
  constexpr size_t kBytesPerRange = size_t{16} << 20;
  const size_t rest = size - from;
  const size_t ranges = std::clamp<size_t>(rest / kBytesPerRange, 1,
                                           std::max(1u, std::thread::hardware_concurrency()));
  std::vector<size_t> got(ranges, 0);
  std::vector<char> failed(ranges, 0);
  const auto begin_of = [&](size_t r) { return from + rest * r / ranges; };
  const auto read_range = [&](size_t r) {
    got[r] = ReadRange(fd, data + begin_of(r), begin_of(r), begin_of(r + 1) - begin_of(r),
                       &failed[r]);
  };
  std::vector<std::thread> threads;
  size_t r = 1;
  for (; r < ranges; ++r) {
    try {
      threads.emplace_back(read_range, r);
    } catch (const std::system_error&) {
      break;  // the rest on this thread
    }
  }
  read_range(0);
  for (size_t rest = r; rest < ranges; ++rest) read_range(rest);
  for (std::thread& thread : threads) thread.join();
  size_t total = from;
  for (size_t k = 0; k < ranges; ++k) {
    if (failed[k]) return absl::DataLossError("reading the file failed");
    total += got[k];
    if (got[k] < begin_of(k + 1) - begin_of(k)) break;
  }
  return total;
}

absl::StatusOr<Problem> Parse(std::string_view bytes, const std::string& path) {
  if (bytes.compare(0, kBinaryMagic.size(), kBinaryMagic) == 0) return ParseBinary(bytes, path);
  return ParseText(bytes, path);
}

// Whether the file `fd`, whose state was `before`, has another size or time of change now.
bool ChangedSince(int fd, const struct stat& before) {
  struct stat after;
  return fstat(fd, &after) != 0 || after.st_size != before.st_size ||
         after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
         after.st_mtim.tv_nsec != before.st_mtim.tv_nsec;
}

// Tells LoadOptions::flows_read of every flow of a problem read whole (a binary file, a pipe).
absl::StatusOr<Problem> TellFlowsRead(absl::StatusOr<Problem> parsed,
                                      const LoadOptions& options) {
  if (!parsed.ok() || !options.flows_read || parsed->flows.empty()) return parsed;
  RETURN_IF_ERROR(options.flows_read(parsed->flows, 0, parsed->flows.size()));
  return parsed;
}

// Parses a problem file read in place (MappedFile): nothing is copied, and a text's pages go
// back as the parser is done with them, to be read again from the system's cache where it reads
// them twice. The file must not change meanwhile: DataLoss if it did (it shrank under the
// mapping, or its size or time of change moved).
absl::StatusOr<Problem> ParseMapped(const MappedFile& file, int fd, const struct stat& before,
                                    const std::string& path, const LoadOptions& options) {
  const std::string_view bytes = file.bytes();
  const std::string_view head = bytes.substr(0, kPiece);
  const bool binary = head.starts_with(kBinaryMagic);
  // Released ranges come in order, each from where the last ended: the page that holds
  // `begin` is all released once `end` is past it.
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const auto release = [&](size_t begin, size_t end) {
    file.Discard(begin / page * page, end - begin / page * page);
  };
  const auto reload = [](size_t, size_t) {};  // the mapping reads the file again itself
  TextPaging paging{.release = release, .reload = std::nullopt, .released_text_returns = true};
  if (options.reread) paging.reload.emplace(reload);
  if (options.flows_read) paging.flows_read.emplace(options.flows_read);
  absl::StatusOr<Problem> parsed = binary ? TellFlowsRead(ParseBinary(bytes, path), options)
                                   : NeitherFormat(head) ? NeitherFormatError(path)
                                                         : ParseText(bytes, path, paging);
  // Whatever was made of it, a file that changed is not the file that was read.
  if (file.changed() || ChangedSince(fd, before)) {
    return absl::DataLossError(absl::StrFormat("%s: the file changed while it was read", path));
  }
  return parsed;
}

}  // namespace

absl::StatusOr<Problem> LoadProblem(const std::string& path, const LoadOptions& options) {
  return internal::LoadProblem(path, options, [] {});
}

namespace internal {

absl::StatusOr<Problem> LoadProblem(const std::string& path, const LoadOptions& options,
                                    absl::FunctionRef<void()> mapped) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: is a directory", path));
  }
  const auto too_large = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: larger than the %d bytes a problem file may have", path, kMaxProblemFileBytes));
  };
  const auto neither = [&] { return NeitherFormatError(path); };
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    const std::string why =
        absl::StrFormat("%s: cannot open the file: %s", path, std::strerror(error));
    return error == EACCES || error == EPERM ? absl::PermissionDeniedError(why)
                                             : absl::NotFoundError(why);
  }
  // Closed on every way out, an exception's too (the parser's threads may throw bad_alloc).
  const std::unique_ptr<const int, void (*)(const int*)> closer(&fd, [](const int* f) {
    close(*f);
  });
  struct stat info;
  // A regular file that says it has no bytes may have some (those of /proc): it is read to
  // its end, as a pipe is.
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
    const uint64_t size = static_cast<uint64_t>(info.st_size);
    if (size > kMaxProblemFileBytes) {
      return too_large();
    }
    // A regular file is read in place where the system maps it, and read otherwise.
    if (absl::StatusOr<MappedFile> file = MappedFile::Map(fd, size); file.ok()) {
      mapped();
      return ParseMapped(*file, fd, info, path, options);
    }
    // Its size is known, so it is read at once into room of that size.
    // Memory of its own (MappedBuffer), given back to the system as soon as the problem is
    // read: the text, about as large as the problem, is never held beside what a solve needs.
    absl::StatusOr<MappedBuffer> bytes = MappedBuffer::Allocate(size);
    if (!bytes.ok()) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("%s: no memory for the file's %d bytes", path, size));
    }
    char* const data = reinterpret_cast<char*>(bytes->data());
    // The first piece tells the format; a binary problem, or a text read once, is read whole.
    char failed = 0;
    const size_t head = ReadRange(fd, data, 0, std::min<size_t>(size, kPiece), &failed);
    const bool binary = std::string_view(data, head).starts_with(kBinaryMagic);
    const bool whole = binary || !options.reread;
    // The rest after the first piece (none if the file ended early: it shrank).
    const absl::StatusOr<size_t> got =
        !whole ? size : head < std::min<size_t>(size, kPiece) ? head : ReadAt(fd, data, head, size);
    if (failed || !got.ok()) {
      return absl::DataLossError(absl::StrFormat("%s: reading the file failed", path));
    }
    const std::string_view text(data, *got);
    if (NeitherFormat(std::string_view(data, head)) || binary) {
      return binary ? TellFlowsRead(ParseBinary(text, path), options) : neither();
    }
    // The text goes back to the system as the parser is done with it, whole pages at a time:
    // it is never held whole beside the whole problem. Read twice (options.reread), little of
    // it is held at any time: the first pass has each piece read and gives it back once read,
    // the second has each stretch read again.
    std::atomic<bool> reloaded{true};
    // Released ranges come in order, each from where the last ended: the page that holds
    // `begin` is all released once `end` is past it.
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const auto release = [&](size_t begin, size_t end) {
      bytes->Discard(begin / page * page, end - begin / page * page);
    };
    const auto reload = [&](size_t begin, size_t end) {
      if (ReadRange(fd, data + begin, begin, end - begin) != end - begin) reloaded = false;
    };
    TextPaging paging{.release = release, .reload = std::nullopt};
    if (options.reread) paging.reload.emplace(reload);
    if (options.flows_read) paging.flows_read.emplace(options.flows_read);
    absl::StatusOr<Problem> parsed = ParseText(text, path, paging);
    if (options.reread && (!reloaded || ChangedSince(fd, info))) {
      return absl::DataLossError(
          absl::StrFormat("%s: the file changed while it was read, or could not be read again "
                          "(it is read twice)",
                          path));
    }
    return parsed;
  }
  // Pipes and process substitutions work too, so the size is learned by reading: in pieces,
  // stopping at kMaxProblemFileBytes, and at once on bytes that fit neither format. Read into
  // room reserved for the largest file (address space: a page is backed as it is written), the
  // text is never copied as it grows, and it goes back as the parser is done with it, as a
  // regular file's does: a 300 MiB pipe peaked at 841 MB read into a growing string, against
  // 317 MB for the same bytes in a file.
  if (absl::StatusOr<MappedBuffer> room = MappedBuffer::Allocate(kMaxProblemFileBytes + kPiece);
      room.ok()) {
    char* const data = reinterpret_cast<char*>(room->data());
    size_t size = 0;
    for (;;) {
      if (size > kMaxProblemFileBytes) return too_large();
      // A piece is read whole (a pipe gives what it holds at the moment), so that the first
      // piece's check sees its full megabyte.
      const absl::StatusOr<size_t> got = ReadPiece(fd, data + size, path);
      if (!got.ok()) return got.status();
      if (size == 0 && NeitherFormat(std::string_view(data, *got))) return neither();
      size += *got;
      if (*got < kPiece) break;  // the end
    }
    const std::string_view text(data, size);
    if (text.starts_with(kBinaryMagic)) return TellFlowsRead(ParseBinary(text, path), options);
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const auto release = [&](size_t begin, size_t end) {
      room->Discard(begin / page * page, end - begin / page * page);
    };
    TextPaging paging{.release = release, .reload = std::nullopt};
    if (options.flows_read) paging.flows_read.emplace(options.flows_read);
    return ParseText(text, path, paging);
  }
  std::string bytes;
  for (;;) {
    const size_t at = bytes.size();
    if (at > kMaxProblemFileBytes) {
      return too_large();
    }
    bytes.resize(at + kPiece);
    const absl::StatusOr<size_t> got = ReadPiece(fd, bytes.data() + at, path);
    if (!got.ok()) return got.status();
    bytes.resize(at + *got);
    if (at == 0 && NeitherFormat(bytes)) {
      return neither();
    }
    if (*got < kPiece) break;  // the end
  }
  return TellFlowsRead(Parse(bytes, path), options);
}

}  // namespace internal

}  // namespace sluice::ifds
