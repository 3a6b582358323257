#include "sluice/ifds/text_format.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <new>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "sluice/base/heap.h"
#include "sluice/base/ordered_work.h"
#include "sluice/base/status_macros.h"
#include "sluice/base/utf8.h"

namespace sluice::ifds {
namespace {

// Names are ASCII letters, digits and punctuation below, or UTF-8 (bytes >= 0x80, checked to
// form valid sequences). Each byte's class, looked up once per byte.
enum CharClass : uint8_t { kOther, kName, kHigh, kBlank, kNewline, kComment, kPunct };

constexpr std::array<uint8_t, 256> MakeClasses() {
  std::array<uint8_t, 256> c{};
  for (int b = 'a'; b <= 'z'; ++b) c[b] = kName;
  for (int b = 'A'; b <= 'Z'; ++b) c[b] = kName;
  for (int b = '0'; b <= '9'; ++b) c[b] = kName;
  for (char b : std::string_view("_.$:@'<>[]/+*!?~^&|%=-")) c[static_cast<uint8_t>(b)] = kName;
  for (int b = 0x80; b <= 0xff; ++b) c[b] = kHigh;
  c[' '] = c['\t'] = c['\r'] = kBlank;
  c['\n'] = kNewline;
  c['#'] = kComment;
  c['{'] = c['}'] = c[','] = kPunct;
  return c;
}
constexpr std::array<uint8_t, 256> kClasses = MakeClasses();

uint8_t ClassOf(char c) { return kClasses[static_cast<uint8_t>(c)]; }

// The bytes where the fast way's scan of an ASCII name stops to look: any but a name's, and
// '-' (which may begin an arrow).
constexpr std::array<bool, 256> MakeNameStops() {
  std::array<bool, 256> stop{};
  for (int b = 0; b < 256; ++b) stop[b] = kClasses[b] != kName || b == '-';
  return stop;
}
constexpr std::array<bool, 256> kNameStops = MakeNameStops();

// The first `a` or `b` at or after `at` in `text`, or text.size(), 16 bytes a step. Flows are
// most of a problem's text: FlowEnd finds where one ends, and a flow's items are found by the
// ',' or '}' after each.
template <char A, char B>
size_t FirstOf(std::string_view text, size_t at) {
  const char* const t = text.data();
#if defined(__SSE2__)
  const __m128i a = _mm_set1_epi8(A), b = _mm_set1_epi8(B);
  for (; at + 16 <= text.size(); at += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t + at));
    const auto found = static_cast<uint32_t>(_mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(bytes, a), _mm_cmpeq_epi8(bytes, b))));
    if (found != 0) return at + static_cast<size_t>(std::countr_zero(found));
  }
#endif
  while (at < text.size() && t[at] != A && t[at] != B) ++at;
  return at;
}

// How many bytes of the `size` at `p` are `C`: 16 a step, counted in bytes for up to 255 steps
// and then summed. The first pass counts a run of connecting lines' '>' this way, at once.
template <char C>
uint64_t CountOf(const char* p, size_t size) {
  uint64_t count = 0;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i c = _mm_set1_epi8(C), zero = _mm_setzero_si128();
  while (i + 16 <= size) {
    const size_t steps = std::min<size_t>((size - i) / 16, 255);
    __m128i counted = zero;
    for (size_t step = 0; step < steps; ++step, i += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      counted = _mm_sub_epi8(counted, _mm_cmpeq_epi8(bytes, c));  // a match is -1
    }
    const __m128i sums = _mm_sad_epu8(counted, zero);  // each half's bytes, summed
    count += static_cast<uint64_t>(_mm_cvtsi128_si32(sums)) +
             static_cast<uint64_t>(_mm_extract_epi16(sums, 4));
  }
#endif
  for (; i < size; ++i) count += p[i] == C ? 1 : 0;
  return count;
}

// The first '}' or newline at or after `at` in `text`, or text.size(): where a flow that begins
// at `at` ends, if it is on the line.
size_t FlowEnd(std::string_view text, size_t at) { return FirstOf<'}', '\n'>(text, at); }

// The low `bytes` bytes of a word (1 to 8).
constexpr uint64_t LowBytes(size_t bytes) {
  return bytes >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
}

// LoadWords where fewer than 16 bytes may be read (the text's very end): copied out first.
[[gnu::noinline]] void CopyWords(const char* p, size_t size, uint64_t* lo, uint64_t* hi) {
  char bytes[16] = {};
  std::memcpy(bytes, p, size);
  std::memcpy(lo, bytes, 8);
  std::memcpy(hi, bytes + 8, 8);
}

// The `size` bytes at `p` (1 to 16) as two words, zero-padded. Where 16 bytes may be read at
// `p` (`sixteen`), two unaligned loads and masks; else copied out first.
inline void LoadWords(const char* p, size_t size, bool sixteen, uint64_t* lo, uint64_t* hi) {
  static_assert(std::endian::native == std::endian::little, "text loads as little-endian");
  if (sixteen) [[likely]] {
    std::memcpy(lo, p, 8);
    std::memcpy(hi, p + 8, 8);
    *lo &= LowBytes(size);
    *hi = size > 8 ? *hi & LowBytes(size - 8) : 0;
    return;
  }
  CopyWords(p, size, lo, hi);
}

// Whether `s` is `word`, a literal: compared in a few instructions, where string_view's
// operator== calls memcmp (the readers compare every line's first word).
template <size_t N>
bool Is(std::string_view s, const char (&word)[N]) {
  return s.size() == N - 1 && std::memcmp(s.data(), word, N - 1) == 0;
}

bool IsNameChar(char c) {
  const uint8_t k = ClassOf(c);
  return k == kName || k == kHigh;
}

enum class Kind { kName, kOpen, kClose, kComma, kArrow, kEnd };

struct Token {
  Kind kind;
  std::string_view text;
  uint32_t line;
  uint32_t column;
};

// The kind of a token whose text is `text`, as NextStatement found it: a name never is "->",
// nor holds '{', '}' or ','.
Kind KindOf(std::string_view text) {
  switch (text[0]) {
    case '{':
      return Kind::kOpen;
    case '}':
      return Kind::kClose;
    case ',':
      return Kind::kComma;
    default:
      return text.size() == 2 && text[0] == '-' && text[1] == '>' ? Kind::kArrow : Kind::kName;
  }
}

// One statement (one line): its tokens. The text is tokenized once per pass, a statement at a
// time, so parsing holds one statement's tokens (32 bytes each), not the whole file's: memory
// beyond the problem itself follows the longest line.
using Statement = std::vector<Token>;
// A statement's tokens where they lie: in a Statement, or in the first pass's pieces.
using Tokens = absl::Span<const Token>;

// Where the tokenizer is in the text.
struct Cursor {
  size_t i = 0;
  uint32_t line = 1;
  size_t line_start = 0;
};

// Abseil's string hash (std::string_view keys would fall back to std::hash, slower).
struct NameHash {
  size_t operator()(std::string_view name) const {
    return absl::Hash<absl::string_view>{}(absl::string_view(name.data(), name.size()));
  }
};

// The flows a stretch has read lately, by their text (from '{' to '}'): a flow written again is
// found here and shared, not read again. A front end lists the same facts in scope along many
// edges of a procedure, so the last flows read are most of those written again; a cache of
// them, a slot per hash of the text's size and its first and last 16 bytes (the text is found
// whole first, FlowEnd), costs each flow one slot and at most one comparison. Emptied by a new
// generation, not a fill: a stretch is read again after each line the slow way reads.
class FlowTexts {
 public:
  FlowTexts() { slots_.fill(Slot{0, 0, 0, 0, 0}); }
  // Empty.
  void Clear() {
    if (++generation_ == 0) {  // wrapped: every slot is of an old generation again
      slots_.fill(Slot{0, 0, 0, 0, 0});
      generation_ = 1;
    }
  }
  // The hash a text of `size` bytes at `p` is found and noted by (never 0: an empty slot).
  static uint64_t Hash(const char* p, size_t size) {
    uint64_t first[2] = {0, 0}, last[2] = {0, 0};
    std::memcpy(first, p, std::min<size_t>(size, 16));
    if (size > 16) std::memcpy(last, p + size - 16, 16);
    uint64_t h = size * 0x9e3779b97f4a7c15ULL;
    for (const uint64_t word : {first[0], first[1], last[0], last[1]}) {
      h = (h ^ word) * 0xff51afd7ed558ccdULL;
      h ^= h >> 32;  // a product's high bits back into its low ones
    }
    h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ULL;  // every bit into every bit
    return (h ^ (h >> 33)) | 1;
  }
  // The flow noted for the text of `size` bytes at `at` in `whole`, hashed `hash`, if any.
  bool Find(std::string_view whole, size_t at, size_t size, uint64_t hash,
            uint32_t* flow) const {
    const Slot& s = slots_[Place(hash)];
    if (s.generation != generation_ || s.hash != hash || s.size != size ||
        std::memcmp(whole.data() + s.at, whole.data() + at, size) != 0) {
      return false;
    }
    *flow = s.flow;
    return true;
  }
  // Notes `flow` as that text's (in place of the slot's last).
  void Note(size_t at, size_t size, uint64_t hash, uint32_t flow) {
    slots_[Place(hash)] = Slot{hash, at, static_cast<uint32_t>(size), flow, generation_};
  }

 private:
  static constexpr int kSlotBits = 10;
  // A hash's slot, by its high bits (its lowest is always set).
  static size_t Place(uint64_t hash) { return static_cast<size_t>(hash >> (64 - kSlotBits)); }
  struct Slot {
    uint64_t hash;
    uint64_t at;
    uint32_t size;
    uint32_t flow;
    uint32_t generation;  // a slot of another generation is empty
  };
  std::array<Slot, size_t{1} << kSlotBits> slots_;
  uint32_t generation_ = 1;
};

// The items of flows the fast way has read ('a -> b', 'id', 'kill a', 'gen a'), by their text:
// from just after the '{' or ',' before one to the ',' or '}' after it, blanks and all. A front
// end lists the same few pairs in flow after flow (a fact in scope flows to itself along every
// edge): an item found here costs a scan for its end, two words and one slot, where reading it
// looks each of its names up. What an item means follows from its text alone (every fact is
// declared before the second pass), so nothing here is ever stale. Items of at most 16 bytes,
// a slot per hash of the text; a text found is the same text (its words and size are the key).
class ItemTexts {
 public:
  enum class Kind : uint8_t { kPair, kIdentity, kKill, kGen };
  struct Item {
    Kind kind;
    uint32_t value;  // a pair's word (PackPair), or a kill's or gen's fact
  };
  static constexpr size_t kMaxBytes = 16;

  // The item whose text of `size` bytes is the words `lo` and `hi` (LoadWords), if noted.
  bool Find(uint64_t lo, uint64_t hi, size_t size, Item* item) const {
    const Slot& slot = slots_[Place(lo, hi, size)];
    if (slot.lo != lo || slot.hi != hi || slot.size != size) return false;
    *item = slot.item;
    return true;
  }
  // Notes `item` as that text's (in place of the slot's last).
  void Note(uint64_t lo, uint64_t hi, size_t size, Item item) {
    slots_[Place(lo, hi, size)] = Slot{lo, hi, static_cast<uint32_t>(size), item};
  }

 private:
  static constexpr int kSlotBits = 9;
  struct Slot {
    uint64_t lo = 0, hi = 0;
    uint32_t size = 0;  // 0: empty (an item has a text)
    Item item{};
  };
  static size_t Place(uint64_t lo, uint64_t hi, size_t size) {
    const uint64_t mixed = ((lo ^ (hi * 0xff51afd7ed558ccdULL)) + size) * 0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>(mixed >> (64 - kSlotBits));
  }
  std::array<Slot, size_t{1} << kSlotBits> slots_{};
};

// The second pass reads the text in stretches of about this many bytes (whole lines), several
// at once on a machine with the cores for it, and adds them to the problem in the text's order.
constexpr size_t kStretchBytes = size_t{2} << 20;
// How many pieces the first pass's readers may read ahead of its declaring (Parser::FirstPass).
constexpr size_t kFirstPassAhead = 16;
// Where the text is read twice to hold little of it (TextPaging::reload), its stretches are a
// quarter as long, and it is given back this much at a time rather than kReleaseStepBytes: the
// text held and the stretches' lists (four at once on two cores) are then fewer, in the same
// time (a client of a daemon reading the 5M-path-edge problem of bench/run.sh peaked at 90 MiB
// with stretches half as long, 86 with quarters, 84 with eighths, worse at 1M: docs/benchmarks.md).
constexpr size_t kRereadBytes = kStretchBytes / 4;

// What the second pass's fast way read from a stretch of the text, in the text's order: flows
// and edges as they will be added to the problem, and call sites, callees and seeds, whose
// checks against the rest of the problem (a node has one call site, given before its callees)
// wait until every stretch before is in (Parser::Commit).
struct Stretch {
  enum class Kind : uint8_t { kCall, kCallee, kSeed };
  struct Connection {
    Kind kind;
    uint32_t node;         // the call node, or the seed's node
    uint32_t other;        // the return site, the callee's procedure, or the seed's fact
    uint32_t flow;         // into `flows`: the call-to-return flow, or the call flow
    uint32_t return_flow;  // a callee's return flow
    uint32_t line;         // the statement's, and where it begins
    size_t line_start;
    Cursor at() const { return Cursor{.i = line_start, .line = line, .line_start = line_start}; }
  };
  FlowTable flows;
  std::vector<Edge> edges;  // their flows index `flows`
  std::vector<Connection> connections;
  // The flows read in the stretch by their text: a flow written again (a front end lists the
  // same facts in scope along many edges) is found, not read again, and its edges share it.
  FlowTexts flow_texts;
  // The flows' items read by whatever stretches were read here before (kept by clear()).
  ItemTexts items;
  // Where the fast way stopped: the stretch's end, or the start of a line it does not take.
  Cursor stopped;
  // Whether `flows` were checked (ValidateFlows) where they were read, on the reader's thread.
  bool flows_checked = false;
  // Whether the reading stopped at a declaration the first pass did not read (Parser::Late).
  bool late = false;
  // The node the reader named last, where it looks for the next first (Parser::NearNode): a
  // hint, kept by clear().
  uint32_t last_node = 0;

  // Empty, keeping the room.
  void clear() {
    flows.clear();
    edges.clear();
    connections.clear();
    flow_texts.Clear();
    flows_checked = false;
    late = false;
  }
};

// Connecting statements the first pass skipped, by kind, to size the second pass's lists.
struct SkipCounts {
  uint64_t edges = 0, calls = 0, callees = 0, arrows = 0;

  // Counts a statement skipped: its first word `head`, and the '>' its line holds (each pair
  // has an arrow: at most this many pairs, as a name may hold a '>' too).
  void Add(std::string_view head, uint64_t line_arrows) {
    if (Is(head, "edge")) ++edges;
    if (Is(head, "call")) ++calls;
    if (Is(head, "callee")) ++callees;
    arrows += line_arrows;
  }
  // These counts, of `sampled` bytes, in proportion to `bytes` (rounded up; none of none).
  SkipCounts Scaled(uint64_t bytes, uint64_t sampled) const {
    if (sampled == 0) return {};
    const double ratio = static_cast<double>(bytes) / static_cast<double>(sampled);
    const auto scale = [&](uint64_t count) {
      return static_cast<uint64_t>(std::ceil(static_cast<double>(count) * ratio));
    };
    return {scale(edges), scale(calls), scale(callees), scale(arrows)};
  }
  SkipCounts& operator+=(const SkipCounts& other) {
    edges += other.edges;
    calls += other.calls;
    callees += other.callees;
    arrows += other.arrows;
    return *this;
  }
};

// What the first pass read from a piece of the text (the lines that begin in it) on any
// thread: its declarations tokenized, its connecting statements counted and skipped unread.
// Lines count from the piece's first; the thread that declares the pieces' statements in the
// text's order (Parser::FirstPass) makes them the file's.
struct FirstPiece {
  bool empty = true;  // no line begins in the piece
  Cursor begin;       // its first line
  uint32_t lines = 0;
  SkipCounts counts;
  bool skipped = false;  // a connecting statement was skipped
  // A declaration's token as the piece keeps it: where it lies on its line (a statement is one
  // line). Its kind and text follow from the text, its line and column from the declaration's:
  // 8 bytes a token where a Token is 32, and the declarations of a large problem hold millions
  // of names.
  struct Packed {
    uint32_t offset;  // from the statement's first token
    uint32_t size;
  };
  // Every declaration's tokens, and per declaration where its line and first token begin,
  // where its tokens end in `tokens`, and the line's number. A statement too long for Packed
  // (4 GiB) keeps none (packed() is false): it is tokenized again.
  PageVector<Packed> tokens;
  struct Declaration {
    size_t line_start;
    size_t first;
    size_t next;  // the offset past its line
    size_t end;
    uint32_t line;
    bool packed() const { return next - first <= UINT32_MAX; }
  };
  PageVector<Declaration> declarations;
  // A statement that does not tokenize, where the piece stops: read again in order, it is the
  // parse's error unless one comes before it.
  std::optional<Cursor> untokenized;
  // Where a speculative first pass stopped reading the piece: its first connection's line, or
  // the blank and comment lines before it.
  std::optional<Cursor> connections;
  Statement scratch;

  // Empty, keeping the room.
  void clear() {
    empty = true;
    lines = 0;
    counts = {};
    skipped = false;
    tokens.clear();
    declarations.clear();
    untokenized.reset();
    connections.reset();
  }
};

// Where the bytes of a list's names end, where they lie together, one after another (a
// NameList's do): a name with 16 bytes before that end may be read 16 bytes at a time in place.
// nullptr for a list whose names lie apart.
const char* EndOfNames(const NameList& names) {
  return names.empty() ? nullptr : names.back().data() + names.back().size();
}
template <class Names>
const char* EndOfNames(const Names&) {
  return nullptr;
}

// Names to ids for the second pass, where every statement looks several up, in an
// open-addressed table. Most tables have 16-byte slots, a name's key and its id: a name of at
// most 12 bytes is its own key, its bytes in a word and a half (zero-padded: names hold no NUL
// byte), found with one multiply and one cache line, never reading the name's declaration; a
// longer one's key is a 64-bit hash of its bytes and a mark no shorter name's key has, and a
// slot whose key matches is confirmed by reading the name itself (`names[id]`, where a front end
// declares a procedure's nodes side by side, as its edges name them). A large table some of
// whose names are longer (a front end's nodes: luaV_execute7:12) has 8-byte slots instead, a
// tag of every name's hash and its id, each match confirmed by reading the name: those names are
// read whichever way, and the table is half the size (7.5 MB of a 5M-path-edge problem's
// 15 MB, and the peak of a daemon's client that reads it). No name takes a map or a copy.
class NameIndex {
 public:
  // `names[i]` has id i, and `names` outlives the index; `text` is where the names looked up
  // lie (a name in it is read in place). A name given twice makes duplicates() true (the index
  // is then incomplete). Many names are placed on up to `threads` threads, each filling a part
  // of the table.
  template <class Names>
  NameIndex(const Names& names, std::string_view text, unsigned threads = 1)
      : text_end_(text.data() + text.size()), names_(&names), name_at_(&NameAt<Names>) {
    // Keys loaded in place where the names lie together (EndOfNames), copied out elsewhere.
    const char* const names_end = EndOfNames(names);
    // At most 5/6 full (3/4 took 2 MiB more on a 5M-path-edge problem's 781K nodes, and found
    // them no faster: most are found beside the last, NearNode); a slot is found by
    // multiplying, so any size will do.
    const size_t size = std::max<size_t>(16, names.size() + names.size() / 5 + 1);
    const bool tagged =
        names.size() >= kTaggedFrom &&
        std::any_of(names.begin(), names.end(),
                    [](std::string_view name) { return name.size() > kWholeBytes; });
    if (tagged) {
      tagged_.assign(size, Tagged{0, kEmpty});
      PlaceAll(
          tagged_, names.size(), threads, [&](uint32_t id) { return HashOf(names[id]); },
          [&](uint64_t hash) { return PlaceOf(hash); },
          [&](const Tagged& slot, uint64_t hash, uint32_t id) {
            return slot.tag == static_cast<uint32_t>(hash) && names[slot.id] == names[id];
          },
          [](uint64_t hash, uint32_t id) { return Tagged{static_cast<uint32_t>(hash), id}; });
    } else {
      slots_.assign(size, Slot{0, 0, kEmpty});
      PlaceAll(
          slots_, names.size(), threads,
          [&](uint32_t id) { return KeyOf(names[id], names_end); },
          [&](const SlotKey& key) { return Place(key); },
          [&](const Slot& slot, const SlotKey& key, uint32_t id) {
            return Same(slot, key, names[id]);
          },
          [](const SlotKey& key, uint32_t id) { return Slot{key.lo, key.hi, id}; });
    }
  }

  // An empty index, for names added one by one (Insert): `names[i]` is the name inserted with
  // id i once Insert returns, and `names` outlives the index.
  template <class Names>
  NameIndex(std::string_view text, const Names* names)
      : text_end_(text.data() + text.size()), names_(names), name_at_(&NameAt<Names>) {
    slots_.assign(16, Slot{0, 0, kEmpty});
  }

  // Adds `name` (in the text) with `id`; false (nothing added) if the name is there already.
  bool Insert(std::string_view name, uint32_t id) {
    if (4 * (used_ + 1) > 3 * slots_.size()) Grow();
    const SlotKey key = KeyOf(name);
    size_t at = Place(key);
    for (; slots_[at].id != kEmpty; at = at + 1 == slots_.size() ? 0 : at + 1) {
      if (Same(slots_[at], key, name)) return false;
    }
    slots_[at] = Slot{key.lo, key.hi, id};
    ++used_;
    return true;
  }

  bool duplicates() const { return duplicates_; }

  // The words a name of at most 12 bytes is kept by (false for a longer one, and for every
  // name of an index of tags): two such names are the same exactly when their words are.
  [[gnu::always_inline]] bool Key(std::string_view name, uint64_t* lo, uint64_t* hi) const {
    if (name.size() > kWholeBytes || !tagged_.empty()) return false;
    const SlotKey key = ShortKey(name, text_end_);
    *lo = key.lo;
    *hi = key.hi;
    return true;
  }
  // The id of the name of at most 12 bytes whose words are `lo` and `hi`, if any (Key's).
  [[gnu::always_inline]] bool FindKey(uint64_t lo, uint64_t hi, uint32_t* id) const {
    const SlotKey key{lo, static_cast<uint32_t>(hi)};
    for (size_t at = Place(key);; at = at + 1 == slots_.size() ? 0 : at + 1) {
      const Slot& slot = slots_[at];
      if (slot.id == kEmpty) return false;
      if (slot.lo == key.lo && slot.hi == key.hi) {
        *id = slot.id;
        return true;
      }
    }
  }

  // Starts fetching the slot where `name` would be, for a Find of it a little later.
  void Prefetch(std::string_view name) const {
    if (!tagged_.empty()) {
      __builtin_prefetch(&tagged_[PlaceOf(HashOf(name))]);
    } else {
      __builtin_prefetch(&slots_[Place(KeyOf(name))]);
    }
  }

  bool Contains(std::string_view name) const {
    uint32_t id;
    return Find(name, &id);
  }

  // The id of `name`, if any. Inlined where the readers look names up (a fact a few times a
  // line): the call and its saved registers were a third of a lookup.
  [[gnu::always_inline]] bool Find(std::string_view name, uint32_t* id) const {
    if (name.size() > kWholeBytes || !tagged_.empty()) [[unlikely]] {
      return FindRead(name, id);
    }
    const SlotKey key = ShortKey(name, text_end_);
    return FindKey(key.lo, key.hi, id);
  }

 private:
  static constexpr uint32_t kEmpty = ~uint32_t{0};
  static constexpr size_t kElsewhere = ~size_t{0};
  // A name of at most this many bytes is its own key.
  static constexpr size_t kWholeBytes = 12;
  // An index of this many names or more, some of them longer than kWholeBytes, has tags.
  static constexpr size_t kTaggedFrom = size_t{1} << 16;
  // The high half of a longer name's key: a shorter one's is 0 (8 bytes or fewer) or has its
  // ninth byte, never NUL, in its low byte.
  static constexpr uint32_t kLongMark = 0x100;
  struct SlotKey {
    uint64_t lo;
    uint32_t hi;
  };
  struct Slot {
    uint64_t lo;
    uint32_t hi;
    uint32_t id;
  };
  static_assert(sizeof(Slot) == 16);
  struct Tagged {
    uint32_t tag;  // the low half of the name's hash
    uint32_t id;
  };
  static_assert(sizeof(Tagged) == 8);
  template <class Names>
  static std::string_view NameAt(const void* names, uint32_t id) {
    return (*static_cast<const Names*>(names))[id];
  }

  // Places ids 0 .. count - 1 in `table` (all empty, kEmpty ids), id i by key_of(i): at
  // place(key) or the first empty slot after it; same(slot, key, i) says whether the slot holds
  // the name of id i (a name given twice: duplicates_). Many names are placed in parts, one a
  // thread: a thread places the names whose slot lies in its part and puts aside those whose
  // probe would run past it, placed here once all are done. Each thread writes and reads its
  // own part only.
  template <class Table, class KeyOf, class PlaceOf, class Same, class SlotOf>
  void PlaceAll(Table& table, size_t count, unsigned threads, KeyOf key_of, PlaceOf place,
                Same same, SlotOf slot_of) {
    using Key = decltype(key_of(uint32_t{0}));
    struct Placing {
      Key key;
      size_t at;  // its slot, or kElsewhere where another part or the end places it
    };
    constexpr size_t kPartsFrom = size_t{1} << 16;
    const size_t parts = count >= kPartsFrom ? std::clamp<size_t>(threads, 1, 8) : size_t{1};
    std::vector<std::vector<uint32_t>> aside(parts);
    std::vector<uint8_t> twice(parts, 0);
    const auto place_part = [&](size_t part) {
      const size_t begin = table.size() * part / parts;
      const size_t end = table.size() * (part + 1) / parts;
      // In batches, each batch's slots fetched before any is written: the table is larger
      // than the caches, and its slots are far apart.
      constexpr uint32_t kBatch = 16;
      std::array<Placing, kBatch> keys;
      for (uint32_t first = 0; first < count; first += kBatch) {
        const uint32_t batch = std::min<uint32_t>(kBatch, count - first);
        for (uint32_t k = 0; k < batch; ++k) {
          Placing& key = keys[k];
          key.key = key_of(first + k);
          key.at = place(key.key);
          if (key.at < begin || key.at >= end) {
            key.at = kElsewhere;  // another part's
            continue;
          }
          __builtin_prefetch(&table[key.at], 1);
        }
        for (uint32_t k = 0; k < batch; ++k) {
          if (keys[k].at == kElsewhere) continue;
          size_t at = keys[k].at;
          for (; at < end && table[at].id != kEmpty; ++at) {
            if (same(table[at], keys[k].key, first + k)) twice[part] = 1;
          }
          if (at == end) {
            aside[part].push_back(first + k);
          } else {
            table[at] = slot_of(keys[k].key, first + k);
          }
        }
      }
    };
    // What a worker throws (bad_alloc) is thrown here once every worker is done.
    std::vector<std::exception_ptr> failed(parts);
    std::vector<std::thread> workers;
    for (size_t part = 1; part < parts; ++part) {
      try {
        workers.emplace_back([&, part] {
          try {
            place_part(part);
          } catch (...) {
            failed[part] = std::current_exception();
          }
        });
      } catch (const std::system_error&) {
        break;  // its part on this thread
      }
    }
    try {
      place_part(0);
      for (size_t part = workers.size() + 1; part < parts; ++part) place_part(part);
    } catch (...) {
      failed[0] = std::current_exception();
    }
    for (std::thread& worker : workers) worker.join();
    for (const std::exception_ptr& f : failed) {
      if (f != nullptr) std::rethrow_exception(f);
    }
    for (size_t part = 0; part < parts; ++part) {
      duplicates_ = duplicates_ || twice[part] != 0;
      for (const uint32_t id : aside[part]) {
        const Key key = key_of(id);
        size_t at = place(key);
        for (; table[at].id != kEmpty; at = at + 1 == table.size() ? 0 : at + 1) {
          if (same(table[at], key, id)) duplicates_ = true;
        }
        table[at] = slot_of(key, id);
      }
    }
  }

  // A name of at most 12 bytes as its key. One with 16 bytes after its start before
  // `readable_end` (the text's end for a name in the text, the list's for a name in a list that
  // holds its names together: every name but those at the very end) is loaded in two
  // unaligned words and masked, with no copy.
  [[gnu::always_inline]] static SlotKey ShortKey(std::string_view name,
                                                 const char* readable_end) {
    uint64_t lo = 0, hi = 0;
    if (!name.empty()) {
      const bool sixteen = readable_end != nullptr && readable_end - name.data() >= 16;
      LoadWords(name.data(), name.size(), sixteen, &lo, &hi);
    }
    return {lo, static_cast<uint32_t>(hi)};
  }
  // A 64-bit hash of a name's bytes, 8 at a time: a longer name's key, and any name's in an
  // index of tags.
  static uint64_t HashOf(std::string_view name) {
    uint64_t h = name.size() * 0x9e3779b97f4a7c15ULL;
    size_t i = 0;
    for (; i + 8 <= name.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, name.data() + i, 8);
      h = std::rotl((h ^ word) * 0xff51afd7ed558ccdULL, 29);
    }
    if (i < name.size()) {
      uint64_t word = 0;
      std::memcpy(&word, name.data() + i, name.size() - i);
      h = std::rotl((h ^ word) * 0xff51afd7ed558ccdULL, 29);
    }
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
  }
  static SlotKey LongKey(std::string_view name) { return {HashOf(name), kLongMark}; }
  // The key of a name in the text.
  SlotKey KeyOf(std::string_view name) const { return KeyOf(name, text_end_); }
  static SlotKey KeyOf(std::string_view name, const char* readable_end) {
    return name.size() > kWholeBytes ? LongKey(name) : ShortKey(name, readable_end);
  }
  // Whether `slot` holds `name`, whose key is `key`: for a longer name, its key and then the
  // name itself.
  bool Same(const Slot& slot, const SlotKey& key, std::string_view name) const {
    if (slot.lo != key.lo || slot.hi != key.hi) return false;
    return key.hi != kLongMark || name_at_(names_, slot.id) == name;
  }
  // Find, where the name is read: a longer name's, or any name in an index of tags.
  [[gnu::noinline]] bool FindRead(std::string_view name, uint32_t* id) const {
    if (!tagged_.empty()) {
      const uint64_t hash = HashOf(name);
      const auto tag = static_cast<uint32_t>(hash);
      for (size_t at = PlaceOf(hash);; at = at + 1 == tagged_.size() ? 0 : at + 1) {
        const Tagged& slot = tagged_[at];
        if (slot.id == kEmpty) return false;
        if (slot.tag == tag && name_at_(names_, slot.id) == name) {
          *id = slot.id;
          return true;
        }
      }
    }
    const SlotKey key = LongKey(name);
    for (size_t at = Place(key);; at = at + 1 == slots_.size() ? 0 : at + 1) {
      const Slot& slot = slots_[at];
      if (slot.id == kEmpty) return false;
      if (Same(slot, key, name)) {
        *id = slot.id;
        return true;
      }
    }
  }
  // The slot a key starts at: its words mixed and scaled to the table's size.
  size_t Place(const SlotKey& key) const {
    const uint64_t mixed = (key.lo ^ (uint64_t{key.hi} * 0xff51afd7ed558ccdULL)) *
                           0x9e3779b97f4a7c15ULL;
    return static_cast<size_t>((static_cast<unsigned __int128>(mixed) * slots_.size()) >> 64);
  }
  // The tagged slot a hash starts at: its high bits scaled to the table's size (the tag is its
  // low half).
  size_t PlaceOf(uint64_t hash) const {
    return static_cast<size_t>((static_cast<unsigned __int128>(hash) * tagged_.size()) >> 64);
  }

  // Twice the slots, every name placed again (the slots hold their keys: no name is read).
  void Grow() {
    PageVector<Slot> old = std::move(slots_);
    slots_.assign(2 * old.size(), Slot{0, 0, kEmpty});
    for (const Slot& slot : old) {
      if (slot.id == kEmpty) continue;
      size_t at = Place(SlotKey{slot.lo, slot.hi});
      while (slots_[at].id != kEmpty) at = at + 1 == slots_.size() ? 0 : at + 1;
      slots_[at] = slot;
    }
  }

  const char* const text_end_;
  const void* const names_;
  std::string_view (*const name_at_)(const void* names, uint32_t id);
  PageVector<Slot> slots_;     // or
  PageVector<Tagged> tagged_;  // (an index of tags: its slots are these)
  size_t used_ = 0;  // slots in use (Insert)
  bool duplicates_ = false;
};

class Parser {
 public:
  // `paging`, if set, is told what the parser releases (the second pass: every `release_step`
  // bytes) and asked to reload what it reads again (TextPaging).
  // The passes read stretches of `stretch_bytes` on up to `threads` threads (0: one per core).
  // Nodes are indexed once all are declared, unless `index_as_declared` (or not `fast`): then
  // each as it is, which finds a name declared twice where it is.
  // With `declarations_first`, the first pass stops at the first connection where the text may
  // be read again (see ParseText): `speculative_`.
  Parser(std::string_view text, std::string_view filename, bool fast = true,
         const TextPaging* paging = nullptr, size_t release_step = 0,
         size_t stretch_bytes = kStretchBytes, unsigned threads = 0,
         bool index_as_declared = false, bool declarations_first = true)
      : text_(text), file_(filename), fast_(fast), paging_(paging),
        release_step_(release_step), stretch_bytes_(std::max<size_t>(1, stretch_bytes)),
        threads_(threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency())),
        index_as_declared_(index_as_declared || !fast),
        speculative_(declarations_first && !index_as_declared_ &&
                     (paging == nullptr ||
                      (paging->released_text_returns && !paging->reload.has_value() &&
                       !paging->flows_read.has_value()))),
        terminated_(paging != nullptr && paging->reload.has_value() ? 0 : Terminated(text)) {
    if (index_as_declared_) node_index_.emplace(text, &problem_.node_names);
    proc_index_.emplace(text, &procedure_names_);
  }

  absl::StatusOr<Problem> Parse();
  // Where this parser's first pass stopped reading (kAllRead where it read everything).
  size_t unread_from() const { return unread_from_; }

 private:
  absl::Status Error(uint32_t line, uint32_t column, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrFormat("%s:%d:%d: %s", file_, line, column, what));
  }
  absl::Status Error(const Token& t, const std::string& what) const {
    return Error(t.line, t.column, what);
  }
  // Reads the next statement into `out` (skipping blank and comment lines); false at the end.
  absl::StatusOr<bool> NextStatement(Cursor* cursor, Statement* out) const;
  // Moves past the next statement without tokenizing it, if the pass has nothing to do with it:
  // in the first pass (`declarations`) an edge, call, callee or seed; in the second, a
  // declaration. Its first word is `*head`. False (the cursor past blank and comment lines
  // only, up to the first line that begins at `limit` or later) when NextStatement must read
  // it.
  // With `arrows`, the '>' on the line skipped are added to it (found as its end is).
  bool Skip(Cursor* cursor, bool declarations, std::string_view* head,
            size_t limit = ~size_t{0}, uint64_t* arrows = nullptr) const;
  // The first pass's way past the lines that fill files: from `cursor`, a line's start, past
  // each line that begins with "edge", "call", "callee" or "seed" and a blank, up to the first
  // that does not or that begins at `limit` or later. Counted into `counts` as Skip counts
  // them one at a time, their '>' in one scan of all their bytes. False if it moved past none.
  bool SkipConnecting(Cursor* cursor, size_t limit, SkipCounts* counts) const;
  // The line start at `offset` or next after it (the text's size if none).
  size_t LineStartFrom(size_t offset) const {
    if (offset == 0 || offset >= text_.size()) return std::min(offset, text_.size());
    if (text_[offset - 1] == '\n') return offset;
    return std::min(LineEnd(offset) + 1, text_.size());
  }
  // The first pass's reading of piece k: the lines that begin in [PieceStart(k),
  // PieceStart(k + 1)).
  void ReadFirstPiece(size_t k, FirstPiece* out) const;
  // Where the text is read twice (Rereading), its first reading: the text from the start
  // through the line that holds piece k's last byte, read in order, each byte once.
  void LoadThroughPiece(size_t k) const;
  mutable absl::Mutex load_mu_;
  mutable size_t loaded_ ABSL_GUARDED_BY(load_mu_) = 0;
  mutable size_t newlines_end_ ABSL_GUARDED_BY(load_mu_) = 0;  // past the last newline read
  // The first pass: reads the text's pieces on every core and gives `declare` each
  // declaration, with its place in the file, in the text's order; fails where it does.
  absl::Status FirstPass(
      absl::FunctionRef<absl::Status(const Cursor&, size_t next, Tokens)> declare);
  // Where a speculative first pass stopped at unread_from_, in the stretch of the piece before
  // `piece`: the stretches from `piece` on, and the lists' room they and the rest of that one
  // may need (stretch_counts_, counts_), estimated from a sample.
  void StretchesUnread(size_t piece);
  // The second pass's fast way for the statements that fill files (edge, call, callee and
  // seed) in plain ASCII: read straight from the text into `out`, only once the whole line is
  // read. False (nothing changed) for anything else, and for any line that would be an error
  // here: NextStatement and Connect read those and say what is wrong. It reads only lines that
  // begin before `fast_end`, where a newline ends the last of them (its scans are unchecked).
  bool FastConnect(Cursor* cursor, Stretch* out, size_t fast_end) const;
  // Whether `name` is the node `near` or one beside it (near + 1, near - 1, near + 2), and which
  // (in `*id`). A front end declares a procedure's nodes side by side and names them along its
  // edges in about that order: in a generated front-end-shaped problem, four names in five are
  // such a node's, whose name lies in the cache beside the last one's where its slot in the
  // node index would miss every cache (the 10M problem of bench/run.sh read 6% faster).
  [[gnu::always_inline]] bool NearNode(std::string_view name, uint32_t near, uint32_t* id) const {
    const NameList& names = problem_.node_names;
    if (name.empty()) return false;
    for (const uint32_t candidate : {near + 1, near, near - 1, near + 2}) {
      if (candidate >= names.size()) continue;
      const std::string_view other = names[candidate];
      // Neighbors' names most often differ in their last bytes: compared first.
      if (other.size() == name.size() && other.back() == name.back() && other == name) {
        *id = candidate;
        return true;
      }
    }
    return false;
  }
  static constexpr uint32_t kNotNear = ~uint32_t{0};
  // Reads the fast way from `cursor`, a line's start, to the first line that starts at `end`
  // or later, or to a line the fast way does not take (out->stopped says which).
  void ReadStretch(Cursor cursor, size_t end, Stretch* out) const;
  // Adds what `stretch` read to the problem. Returns the first connection the problem so far
  // refuses (a node's second call site, a callee before its call site), if any: the parse
  // fails there.
  const Stretch::Connection* Commit(const Stretch& stretch);
  // The second pass: edges, call sites, callees and seeds.
  absl::Status SecondPass();
  // Within FastConnect, moving `*i` past what they read: the ASCII name at `*i` (empty if
  // none), blanks, and a flow function into `flow` (false if it is not one the fast way reads).
  [[gnu::always_inline]] std::string_view FastName(size_t* i) const;
  // LineEnd, adding to `*arrows` the '>' from `i` to there: one scan, 16 bytes a step.
  size_t LineEndCountingArrows(size_t i, uint64_t* arrows) const {
    const char* const t = text_.data();
    uint64_t count = 0;
#if defined(__SSE2__)
    const __m128i newline = _mm_set1_epi8('\n'), arrow = _mm_set1_epi8('>');
    for (; i + 16 <= text_.size(); i += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t + i));
      const auto ends = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, newline)));
      auto tips = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, arrow)));
      const int at = ends != 0 ? std::countr_zero(ends) : 16;
      if (at < 16) tips &= (1u << at) - 1;
      // A few '>' in 16 bytes at most: counted a bit at a time (x86-64's baseline has no
      // popcount instruction, and the library's call costs more).
      for (; tips != 0; tips &= tips - 1) ++count;
      if (at < 16) {
        *arrows += count;
        return i + static_cast<size_t>(at);
      }
    }
#endif
    for (; i < text_.size() && t[i] != '\n'; ++i) count += t[i] == '>' ? 1 : 0;
    *arrows += count;
    return i;
  }
  // Where the line holding `i` ends: its newline, or the end of the text.
  size_t LineEnd(size_t i) const {
    const void* newline = std::memchr(text_.data() + i, '\n', text_.size() - i);
    return newline == nullptr ? text_.size()
                              : static_cast<size_t>(static_cast<const char*>(newline) -
                                                    text_.data());
  }
  [[gnu::always_inline]] void FastBlanks(size_t* i) const;
  // The column of the first word on the line that begins at `line_start` (a line the fast way
  // read: its text is there until its stretch is added).
  uint32_t ColumnOfFirstWord(size_t line_start) const {
    size_t i = line_start;
    FastBlanks(&i);
    return static_cast<uint32_t>(i - line_start + 1);
  }
  // An item of a flow the fast way reads, at `*i` (after its blanks), into `item`: moves `*i`
  // past it, or false.
  bool FastItem(size_t* i, ItemTexts::Item* item) const;
  // A flow, into `flows`, its items found in `items` or noted there once read.
  bool FastFlow(size_t* i, FlowTable* flows, ItemTexts* items) const;

  // Builder helpers; `i` walks a statement's tokens.
  absl::StatusOr<std::string_view> Name(Tokens s, size_t* i, const char* what) const;
  absl::Status Keyword(Tokens s, size_t* i, std::string_view word) const;
  absl::Status End(Tokens s, size_t i) const;
  absl::StatusOr<uint32_t> Fact(Tokens s, size_t* i) const;
  absl::StatusOr<uint32_t> Node(Tokens s, size_t* i) const;
  absl::StatusOr<uint32_t> Proc(Tokens s, size_t* i) const;
  absl::StatusOr<uint32_t> ParseFlow(Tokens s, size_t* i);
  absl::Status Declare(Tokens s);
  absl::Status Connect(Tokens s);
  absl::StatusOr<uint32_t> AddNode(const Token& name, uint32_t procedure);
  // A 'nodes' declaration of the first pass (tokens [first, d.end) of `piece`) declared at once,
  // as Declare would declare it, where it names a known procedure and nothing but names and
  // the nodes fit: false (nothing done) otherwise, for Declare to read it and say what fails.
  bool DeclareNodes(const FirstPiece& piece, size_t first, const FirstPiece::Declaration& d);

  const std::string_view text_;
  const std::string_view file_;
  const bool fast_;  // Skip and FastConnect may read statements
  const TextPaging* const paging_;
  const size_t release_step_;
  // Whether the text is read twice (TextPaging::reload).
  bool Rereading() const { return paging_ != nullptr && paging_->reload.has_value(); }
  // Tells TextPaging::flows_read of the flows added since it was last told, checked first.
  absl::Status TellFlowsRead() {
    if (paging_ == nullptr || !paging_->flows_read.has_value()) return absl::OkStatus();
    const size_t last = problem_.flows.size();
    if (flows_told_ == last) return absl::OkStatus();
    if (absl::Status v = ValidateFlows(problem_, std::max(flows_told_, flows_checked_), last);
        !v.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: %s", file_, v.message()));
    }
    RETURN_IF_ERROR((*paging_->flows_read)(problem_.flows, flows_told_, last));
    flows_told_ = last;
    return absl::OkStatus();
  }
  // Tells paging_ of bytes [begin, end) released, or to be read again (clipped to the text).
  void Release(size_t begin, size_t end) const {
    end = std::min(end, text_.size());
    if (paging_ != nullptr && begin < end) paging_->release(begin, end);
  }
  void Reload(size_t begin, size_t end) const {
    end = std::min(end, text_.size());
    if (Rereading() && begin < end) (*paging_->reload)(begin, end);
  }
  // Names the first pass keys its maps by, its own copies (the text may be released).
  std::deque<std::string> declared_names_;
  std::string_view Own(std::string_view name) { return declared_names_.emplace_back(name); }
  const size_t stretch_bytes_;
  // Where piece k of the first pass begins: the first three pieces are an eighth, a quarter and
  // a half of a stretch, the rest a stretch each. A front end lists its declarations first, and
  // one thread declares them in order: it starts on a small piece while the other threads
  // tokenize the next, larger ones, rather than wait for a whole stretch to be tokenized.
  size_t PieceStart(size_t k) const {
    const size_t s = stretch_bytes_;
    if (s < 8) return k * s;  // stretches of a few bytes (tests'): pieces of a stretch
    if (k <= 3) return s / 8 * ((size_t{1} << k) - 1);
    return s / 8 * 7 + (k - 3) * s;
  }
  // The first pass's pieces: up to the first that begins past the text's end.
  size_t Pieces() const {
    size_t k = 0;
    while (k < 3 && PieceStart(k + 1) <= text_.size()) ++k;
    if (k < 3) return k + 1;
    return 3 + (text_.size() - PieceStart(3)) / stretch_bytes_ + 1;
  }
  const unsigned threads_;
  const bool index_as_declared_;
  // Whether the first pass stops at the first connection (a line that begins with edge, call,
  // callee or seed), taking the text from there on to hold nothing it must declare: the second
  // pass then checks that it holds none (Late), and any failure reads the text again with a
  // whole first pass (Parse). A front end lists its declarations first; the lines after them,
  // most of a problem's text, are then read once, not skipped and counted first (the first pass
  // of a 5M-path-edge problem took 18-20 ms where it took 28-31, on two cores:
  // docs/benchmarks.md).
  const bool speculative_;
  // Where the first pass stopped reading (the first connection's line, or the blank and comment
  // lines before it), if it stopped: kAllRead otherwise.
  static constexpr size_t kAllRead = ~size_t{0};
  size_t unread_from_ = kAllRead;
  // Whether a statement the first pass did not read, at `offset`, whose first word is `head`,
  // is one the second pass cannot take as it is: anything but a connection.
  bool Late(size_t offset, std::string_view head) const {
    return offset >= unread_from_ && !Is(head, "edge") && !Is(head, "call") &&
           !Is(head, "callee") && !Is(head, "seed");
  }
  // What a speculative parse returns where it meets a Late statement: Parse reads the text again.
  static absl::Status LateStatus() {
    return absl::AbortedError("a declaration past the first pass");
  }
  // Where the text's last newline ends a line: the fast way reads the lines before. Where the
  // text is read twice, found as the first pass reads it (newlines_end_).
  size_t terminated_;
  static size_t Terminated(std::string_view text) {
    const size_t newline = text.rfind('\n');
    return newline == std::string_view::npos ? 0 : newline + 1;
  }
  // Whether the second pass began: failures before it are read again with index_as_declared_.
  bool connecting_ = false;
  // Where the second pass's stretches begin (line starts, found by the first pass).
  std::vector<Cursor> stretches_;
  // What the first pass counted in each stretch, to size what the second pass reads there.
  std::vector<SkipCounts> stretch_counts_;
  // Room in `out` for what the first pass counted in stretch j, of `bytes` bytes, where that
  // is no more than twice its bytes (the counts are of lines nobody has read yet): a stretch's
  // lists take their size once, not a fresh allocation for each doubling.
  void MakeRoom(size_t j, size_t bytes, Stretch* out) const {
    if (j >= stretch_counts_.size()) return;
    const SkipCounts& c = stretch_counts_[j];
    const uint64_t connections = c.calls + c.callees;
    if (c.edges * sizeof(Edge) + connections * sizeof(Stretch::Connection) <= 2 * bytes) {
      out->edges.reserve(c.edges);
      out->connections.reserve(connections);
    }
  }
  Problem problem_;
  // The procedures' names by id, for proc_index_.
  struct ProcedureNames {
    const PageVector<Procedure>* procedures;
    std::string_view operator[](size_t i) const { return (*procedures)[i].name; }
  };
  const ProcedureNames procedure_names_{&problem_.procedures};
  size_t flows_told_ = 0;  // the flows TextPaging::flows_read has been told of
  // The flows from the first on that were checked as they were read (Stretch::flows_checked,
  // ParseFlow): Validate checks those after them only.
  size_t flows_checked_ = 0;
  absl::flat_hash_map<std::string_view, uint32_t, NameHash> facts_;
  // Nodes by name, filled as the first pass declares them (or once all are, by default);
  // facts by name for the second pass, built from facts_ once every fact is declared;
  // procedures by name, as each is declared.
  std::optional<NameIndex> node_index_, fact_index_, proc_index_;
  std::optional<std::string> zero_;
  bool facts_declared_ = false;
  // Per node: its call site's index in call_sites, or kNoCallSite; per call site, the line and
  // column of its statement (4 and 8 bytes: a node's call site is rare, its nodes many).
  static constexpr uint32_t kNoCallSite = ~uint32_t{0};
  PageVector<uint32_t> call_site_index_;
  std::vector<std::pair<uint32_t, uint32_t>> call_site_at_;
  // Adds call site `site`, given at `line`:`column`.
  void AddCallSite(const CallSite& site, uint32_t line, uint32_t column) {
    call_site_index_[site.call] = static_cast<uint32_t>(problem_.call_sites.size());
    problem_.AddCallSite(site);
    call_site_at_.emplace_back(line, column);
  }
  // A callee of call site `site`: in its place where the site is the last one added (a front
  // end writes a call's callees after it), else kept aside until every line is read and then
  // placed after the site's others (PlaceLateCallees), in the text's order either way.
  void AddCallee(uint32_t site, const Callee& callee) {
    if (site + 1 == problem_.call_sites.size()) {
      problem_.AddCallee(callee);
    } else {
      late_callees_.emplace_back(site, callee);
    }
  }
  absl::Status PlaceLateCallees();
  std::vector<std::pair<uint32_t, Callee>> late_callees_;
  // Statements the first pass skipped, by kind.
  SkipCounts counts_;
  // A flow function's lists as the slow way reads them (reused: reading one allocates nothing).
  Flow scratch_;
  // The first pass skips connecting statements without tokenizing them; if the parse then
  // fails, the first of them that does not tokenize and starts before unread_until_ (where the
  // first pass was) is the error, as it would have been had the first pass read everything.
  bool skipped_unread_ = false;
  size_t unread_until_ = 0;
  // Where that search starts: the beginning for the first pass's errors; for the second's, the
  // statement that failed (every statement before it was tokenized, and the text before it
  // may have been given back: see paging_).
  Cursor rescan_from_;
  absl::StatusOr<Problem> ParseStatements();
};

absl::StatusOr<bool> Parser::NextStatement(Cursor* cursor, Statement* out) const {
  out->clear();
  const char* const t = text_.data();
  const size_t n = text_.size();
  size_t i = cursor->i;
  const auto column = [&](size_t at) { return static_cast<uint32_t>(at - cursor->line_start + 1); };
  const auto arrow_at = [&](size_t at) { return t[at] == '-' && at + 1 < n && t[at + 1] == '>'; };
  while (i < n) {
    const char c = t[i];
    const uint32_t line = cursor->line;
    switch (ClassOf(c)) {
      case kNewline:
        ++cursor->line;
        cursor->line_start = ++i;
        if (!out->empty()) {
          cursor->i = i;
          return true;
        }
        break;
      case kBlank:
        ++i;
        break;
      case kComment: {
        i = LineEnd(i);
        break;
      }
      case kPunct:
        out->push_back(Token{c == '{' ? Kind::kOpen : c == '}' ? Kind::kClose : Kind::kComma,
                             text_.substr(i, 1), line, column(i)});
        ++i;
        break;
      case kName:
      case kHigh: {
        if (arrow_at(i)) {
          out->push_back(Token{Kind::kArrow, text_.substr(i, 2), line, column(i)});
          i += 2;
          break;
        }
        const size_t begin = i;
        bool high = false;
        for (; i < n; ++i) {
          const uint8_t k = ClassOf(t[i]);
          if (k == kHigh) {
            high = true;
          } else if (k != kName || arrow_at(i)) {
            break;
          }
        }
        const std::string_view name = text_.substr(begin, i - begin);
        if (high && !IsValidUtf8(name)) {
          return Error(line, column(begin), "a name is not valid UTF-8");
        }
        out->push_back(Token{Kind::kName, name, line, column(begin)});
        break;
      }
      default:
        return Error(line, column(i),
                     absl::StrFormat("unexpected character '%s'",
                                     absl::CHexEscape(absl::string_view(&t[i], 1))));
    }
  }
  cursor->i = i;
  return !out->empty();
}

bool Parser::Skip(Cursor* cursor, bool declarations, std::string_view* head_out,
                  size_t limit, uint64_t* arrows) const {
  const char* const t = text_.data();
  const size_t n = text_.size();
  size_t i = cursor->i;
  // Blank and comment lines first, as NextStatement skips them.
  for (;;) {
    while (i < n && ClassOf(t[i]) == kBlank) ++i;
    if (i >= n) return false;
    if (t[i] == '#') {
      i = LineEnd(i);
    }
    if (i >= n || t[i] != '\n') break;
    ++cursor->line;
    cursor->line_start = ++i;
    cursor->i = i;
    if (i >= limit) return false;
  }
  const size_t begin = i;
  while (i < n && ClassOf(t[i]) == kName && t[i] != '-') ++i;
  const std::string_view head = text_.substr(begin, i - begin);
  if (i < n && ClassOf(t[i]) != kBlank && ClassOf(t[i]) != kNewline &&
      ClassOf(t[i]) != kComment && ClassOf(t[i]) != kPunct) {
    return false;
  }
  const bool connects =
      Is(head, "edge") || Is(head, "call") || Is(head, "callee") || Is(head, "seed");
  const bool declares = Is(head, "procedure") || Is(head, "nodes") || Is(head, "facts") ||
                        Is(head, "zero") || Is(head, "ifds");
  if (declarations ? !connects : !declares) return false;
  *head_out = head;
  const size_t newline = arrows != nullptr ? LineEndCountingArrows(i, arrows) : LineEnd(i);
  if (newline == n) {
    cursor->i = n;
  } else {
    cursor->i = newline + 1;
    ++cursor->line;
    cursor->line_start = cursor->i;
  }
  return true;
}

bool Parser::SkipConnecting(Cursor* cursor, size_t limit, SkipCounts* counts) const {
  const char* const t = text_.data();
  const size_t n = text_.size();
  // The statement's word at `i` if a blank follows it, else empty.
  const auto head = [&](size_t i) -> std::string_view {
    const auto is = [&](std::string_view word) {
      return n - i > word.size() && std::memcmp(t + i, word.data(), word.size()) == 0 &&
             ClassOf(t[i + word.size()]) == kBlank;
    };
    for (const std::string_view word : {"edge", "call", "callee", "seed"}) {
      if (is(word)) return text_.substr(i, word.size());
    }
    return {};
  };
  const size_t begin = cursor->i;
  Cursor at = *cursor;
  while (at.i < limit) {
    const std::string_view word = head(at.i);
    if (word.empty()) break;
    counts->Add(word, 0);
    const size_t newline = LineEnd(at.i + word.size());
    if (newline == n) {
      at.i = n;
      break;
    }
    at.i = newline + 1;
    ++at.line;
    at.line_start = at.i;
  }
  if (at.i == begin) return false;
  // No '>' in the words or the newlines: these are the lines' own.
  counts->arrows += CountOf<'>'>(t + begin, at.i - begin);
  *cursor = at;
  return true;
}

void Parser::LoadThroughPiece(size_t k) const {
  constexpr size_t kStep = size_t{1} << 20;  // the text read past a piece, and a long line's step
  const size_t n = text_.size();
  if (n == 0) return;
  // The piece's last byte, or the text's.
  const size_t last = std::min(PieceStart(k + 1), n) - 1;
  absl::MutexLock lock(&load_mu_);
  for (;;) {
    // The piece's end is past the first newline from its last byte on: loaded that far?
    if (loaded_ > last &&
        (loaded_ == n || std::memchr(text_.data() + last, '\n', loaded_ - last) != nullptr)) {
      return;
    }
    const size_t to = std::min(n, std::max(last + 1, loaded_) + kStep);
    Reload(loaded_, to);
    const size_t in_range = Terminated(text_.substr(loaded_, to - loaded_));
    if (in_range != 0) newlines_end_ = loaded_ + in_range;
    loaded_ = to;
  }
}

void Parser::ReadFirstPiece(size_t k, FirstPiece* out) const {
  out->clear();
  if (Rereading()) LoadThroughPiece(k);
  const size_t begin = LineStartFrom(PieceStart(k));
  const size_t end = LineStartFrom(PieceStart(k + 1));
  if (begin >= end) return;
  out->empty = false;
  Cursor cursor{.i = begin, .line = 1, .line_start = begin};
  out->begin = cursor;
  std::string_view head;
  while (cursor.i < end) {
    // Speculative, a connection ends the reading: one line is looked at, not all that follow.
    const Cursor before = cursor;
    if (SkipConnecting(&cursor, speculative_ ? cursor.i + 1 : end, &out->counts)) {
      if (speculative_) {
        out->connections = cursor = before;
        break;
      }
      out->skipped = true;
      continue;
    }
    uint64_t arrows = 0;
    if (Skip(&cursor, /*declarations=*/true, &head, end, &arrows)) {
      if (speculative_) {
        out->connections = cursor = before;
        break;
      }
      // Unread: tokenized only if the parse fails (Parse).
      out->skipped = true;
      out->counts.Add(head, arrows);
      continue;
    }
    if (cursor.i >= end) break;
    const Cursor at = cursor;
    absl::StatusOr<bool> more = NextStatement(&cursor, &out->scratch);
    if (!more.ok()) {
      out->untokenized = at;
      return;
    }
    if (!*more) break;
    // A piece of declarations (a front end lists them first) holds many.
    ReserveHugeRoom(out->tokens, out->tokens.size() + out->scratch.size());
    ReserveHugeRoom(out->declarations, out->declarations.size() + 1);
    // The statement's line begins past the last newline before its first token, if the
    // reading passed one (blank and comment lines), or where the reading began.
    const auto first = static_cast<size_t>(out->scratch.front().text.data() - text_.data());
    const void* newline = memrchr(text_.data() + at.i, '\n', first - at.i);
    const FirstPiece::Declaration d{
        .line_start = newline == nullptr ? at.line_start
                                         : static_cast<size_t>(static_cast<const char*>(newline) -
                                                               text_.data()) + 1,
        .first = first, .next = cursor.i, .end = 0, .line = out->scratch.front().line};
    if (d.packed()) {
      for (const Token& token : out->scratch) {
        out->tokens.push_back(
            FirstPiece::Packed{static_cast<uint32_t>(token.text.data() - text_.data() - first),
                               static_cast<uint32_t>(token.text.size())});
      }
    }
    out->declarations.push_back(d);
    out->declarations.back().end = out->tokens.size();
  }
  out->lines = cursor.line - 1;
}

bool Parser::DeclareNodes(const FirstPiece& piece, size_t first, const FirstPiece::Declaration& d) {
  if (index_as_declared_ || d.end - first < 3) return false;
  const auto text = [&](size_t t) {
    return text_.substr(d.first + piece.tokens[t].offset, piece.tokens[t].size);
  };
  uint32_t procedure;
  if (!Is(text(first), "nodes") || KindOf(text(first + 1)) != Kind::kName ||
      !proc_index_->Find(text(first + 1), &procedure) ||
      problem_.node_names.size() + (d.end - first - 2) > kMaxNodes) {
    return false;
  }
  for (size_t t = first + 2; t < d.end; ++t) {
    if (KindOf(text(t)) != Kind::kName) return false;
  }
  for (size_t t = first + 2; t < d.end; ++t) problem_.node_names.push_back(text(t));
  problem_.node_procedure.insert(problem_.node_procedure.end(), d.end - first - 2, procedure);
  return true;
}

absl::Status Parser::FirstPass(
    absl::FunctionRef<absl::Status(const Cursor&, size_t next, Tokens)> declare) {
  const size_t pieces = Pieces();
  const auto threads = static_cast<unsigned>(std::min<size_t>({threads_, pieces, 64}));
  // One thread declares the pieces' statements in order while the others read on. Where the
  // whole text is there to read they may run kFirstPassAhead pieces ahead: a front end lists
  // its declarations first, and the readers skip the connecting lines after them meanwhile (a
  // 1M-path-edge problem read 11-14% sooner than 4 pieces ahead allowed), or, speculative, stop
  // at each piece's first connection; a piece they are done with holds only the declarations'
  // tokens. Where the text is read twice, a few pieces.
  const size_t ahead = Rereading() ? 2 * size_t{threads}
                                   : std::max<size_t>(2 * size_t{threads}, kFirstPassAhead);
  OrderedWork<FirstPiece> reader(pieces, threads, ahead,
                                 [&](size_t k, FirstPiece& piece) { ReadFirstPiece(k, &piece); });
  uint32_t lines = 0;  // in the pieces before
  size_t released = 0;  // the text before is released (Rereading)
  for (size_t k = 0; k < pieces; ++k) {
    FirstPiece& piece = reader.Take(k);
    const auto in_file = [&](Cursor at) {
      at.line += lines;
      return at;
    };
    // Where a stretch of the second pass begins (the first at the text's start, if empty).
    if (!piece.empty || k == 0) {
      stretches_.push_back(in_file(piece.begin));
      stretch_counts_.emplace_back();
    }
    stretch_counts_.back() += piece.counts;
    counts_ += piece.counts;
    skipped_unread_ = skipped_unread_ || piece.skipped;
    size_t first = 0;
    for (const FirstPiece::Declaration& d : piece.declarations) {
      const Cursor at{.i = d.line_start, .line = d.line + lines, .line_start = d.line_start};
      if (d.packed() && DeclareNodes(piece, first, d)) {
        unread_until_ = at.i;
        first = d.end;
        continue;
      }
      Statement& tokens = piece.scratch;
      tokens.clear();
      if (d.packed()) {
        // Columns as NextStatement counts them (wrapping past 4 GiB as it does).
        const auto column = static_cast<uint32_t>(d.first - d.line_start + 1);
        for (size_t t = first; t < d.end; ++t) {
          const FirstPiece::Packed token = piece.tokens[t];
          const std::string_view text = text_.substr(d.first + token.offset, token.size);
          tokens.push_back(Token{KindOf(text), text, at.line, column + token.offset});
        }
      } else {
        // Tokenized cleanly by the piece's reader, so again here.
        Cursor again = at;
        if (!NextStatement(&again, &tokens).ok()) {
          return absl::InternalError(
              absl::StrFormat("%s:%d: the reader's two ways disagree", file_, at.line));
        }
      }
      if (absl::Status s = declare(at, d.next, tokens); !s.ok()) return s;
      first = d.end;
    }
    if (piece.untokenized.has_value()) {
      Cursor at = in_file(*piece.untokenized);
      unread_until_ = at.i;
      absl::StatusOr<bool> more = NextStatement(&at, &piece.scratch);
      if (!more.ok()) return more.status();
      return absl::InternalError(
          absl::StrFormat("%s:%d: the reader's two ways disagree", file_, at.line));
    }
    if (piece.connections.has_value()) {
      unread_from_ = piece.connections->i;
      StretchesUnread(k + 1);
      return absl::OkStatus();
    }
    lines += piece.lines;
    reader.Release(k);
    // Read and declared: where the text is read twice, it goes back up to the byte before the
    // next piece, which that piece's reading looks at to find its first line.
    if (Rereading()) {
      const size_t to = std::min(PieceStart(k + 1) - 1, text_.size());
      Release(released, to);
      released = std::max(released, to);
    }
  }
  return absl::OkStatus();
}

void Parser::StretchesUnread(size_t piece) {
  // The first kSampleBytes or so past unread_from_ counted as the first pass counts, for the
  // rest to be sized in proportion: an estimate, where the counts are the lists' room only.
  constexpr size_t kSampleBytes = size_t{256} << 10;
  const size_t limit = std::min(text_.size(), unread_from_ + kSampleBytes);
  SkipCounts sample;
  Cursor probe{.i = unread_from_, .line = 1, .line_start = unread_from_};
  while (probe.i < limit) {
    if (SkipConnecting(&probe, limit, &sample)) continue;
    std::string_view head;
    uint64_t arrows = 0;
    if (!Skip(&probe, /*declarations=*/true, &head, limit, &arrows)) break;
    sample.Add(head, arrows);
  }
  const size_t sampled = probe.i - unread_from_;
  const auto estimate = [&](size_t begin, size_t end) {
    const SkipCounts c = sample.Scaled(end - begin, sampled);
    counts_ += c;
    return c;
  };
  // The rest of the piece where the first pass stopped, in that piece's stretch; then the
  // stretches of the pieces after it, as a whole first pass makes them, their first lines'
  // numbers unknown (0): a failure reads the text again (Parse), and the numbers are needed
  // for errors alone.
  size_t begin = LineStartFrom(PieceStart(piece));  // each piece's, its end the next's
  stretch_counts_.back() += estimate(unread_from_, begin);
  for (const size_t pieces = Pieces(); piece < pieces; ++piece) {
    const size_t end = LineStartFrom(PieceStart(piece + 1));
    if (begin < end) {
      stretches_.push_back(Cursor{.i = begin, .line = 0, .line_start = begin});
      stretch_counts_.push_back(estimate(begin, end));
    }
    begin = end;
  }
}

// The fast way reads only lines that end in a newline (FastConnect), so its scans stop at one
// at the latest: they need no check against the text's end.
inline std::string_view Parser::FastName(size_t* i) const {
  const char* const t = text_.data();
  const size_t begin = *i;
  size_t at = begin;
  for (;;) {
    while (!kNameStops[static_cast<uint8_t>(t[at])]) ++at;
    if (t[at] != '-' || t[at + 1] == '>') break;
    ++at;
  }
  // A byte past ASCII may continue the name: the slow way reads it.
  if (ClassOf(t[at]) == kHigh) return {};
  *i = at;
  return text_.substr(begin, at - begin);
}

inline void Parser::FastBlanks(size_t* i) const {
  while (ClassOf(text_[*i]) == kBlank) ++*i;
}

bool Parser::FastItem(size_t* at, ItemTexts::Item* item) const {
  const char* const t = text_.data();
  size_t i = *at;
  const std::string_view word = FastName(&i);
  if (word.empty()) return false;
  FastBlanks(&i);
  // A keyword is never followed by '->': before one, "id", "kill" and "gen" are facts.
  if (t[i] == '-' && t[i + 1] == '>') {
    i += 2;
    FastBlanks(&i);
    uint32_t a, b;
    const std::string_view target = FastName(&i);
    uint64_t a_lo, a_hi, b_lo, b_hi;
    if (fact_index_->Key(word, &a_lo, &a_hi) && fact_index_->Key(target, &b_lo, &b_hi))
        [[likely]] {
      // A fact mapped to itself (most pairs a front end lists) is looked up once.
      if (!fact_index_->FindKey(a_lo, a_hi, &a)) return false;
      if (a_lo == b_lo && a_hi == b_hi) {
        b = a;
      } else if (!fact_index_->FindKey(b_lo, b_hi, &b)) {
        return false;
      }
    } else if (!fact_index_->Find(word, &a) || !fact_index_->Find(target, &b)) {
      return false;
    }
    *item = {ItemTexts::Kind::kPair, PackPair(a, b)};
  } else if (Is(word, "id")) {
    *item = {ItemTexts::Kind::kIdentity, 0};
  } else if (Is(word, "kill") || Is(word, "gen")) {
    uint32_t d;
    if (!fact_index_->Find(FastName(&i), &d)) return false;
    if (word[0] == 'k' && d == kZeroFact) return false;
    *item = {word[0] == 'k' ? ItemTexts::Kind::kKill : ItemTexts::Kind::kGen, d};
  } else {
    return false;
  }
  *at = i;
  return true;
}

bool Parser::FastFlow(size_t* at, FlowTable* flows, ItemTexts* items) const {
  const char* const t = text_.data();
  size_t i = *at;
  FastBlanks(&i);
  if (t[i] != '{') return false;
  ++i;
  bool identity = false;
  for (bool first = true;; first = false) {
    // The item's text runs to the ',' or '}' after it: no name holds either.
    const size_t end = FirstOf<',', '}'>(text_, i);
    if (end >= text_.size()) return false;
    const size_t size = end - i;
    const bool noted = size != 0 && size <= ItemTexts::kMaxBytes;
    uint64_t lo = 0, hi = 0;
    if (noted) LoadWords(t + i, size, text_.size() - i >= 16, &lo, &hi);
    ItemTexts::Item item;
    if (!noted || !items->Find(lo, hi, size, &item)) {
      size_t j = i;
      FastBlanks(&j);
      if (j == end) {
        // Blanks alone: the empty flow ("{}", "{ }"), or a list the slow way says is wrong.
        if (!first || t[end] != '}') return false;
        i = end + 1;
        break;
      }
      if (!FastItem(&j, &item)) return false;
      FastBlanks(&j);
      if (j != end) return false;
      if (noted) items->Note(lo, hi, size, item);
    }
    switch (item.kind) {
      case ItemTexts::Kind::kPair:
        flows->AddPackedPair(item.value);
        break;
      case ItemTexts::Kind::kIdentity:
        identity = true;
        break;
      case ItemTexts::Kind::kKill:
        flows->AddKill(item.value);
        break;
      case ItemTexts::Kind::kGen:
        flows->AddGen(item.value);
        break;
    }
    i = end + 1;
    if (t[end] == '}') break;
  }
  flows->EndFlow(identity);
  *at = i;
  return true;
}

bool Parser::FastConnect(Cursor* cursor, Stretch* out, size_t fast_end) const {
  if (cursor->i >= fast_end) return false;  // a last line with no newline: the slow way
  const char* const t = text_.data();
  size_t i = cursor->i;
  // A node's name is looked for first beside the node named last (NearNode), then in the node
  // index once the rest of the line is read: its slot there (far from the others, past the
  // caches) is fetched meanwhile.
  uint32_t near = out->last_node;
  struct Named {
    std::string_view name;
    uint32_t id;  // kNotNear: not beside the node named before it
  };
  const auto name = [&] {
    FastBlanks(&i);
    Named read{FastName(&i), kNotNear};
    if (NearNode(read.name, near, &read.id)) {
      near = read.id;
    } else {
      node_index_->Prefetch(read.name);
    }
    return read;
  };
  const auto node = [&](const Named& named, uint32_t* id) {
    if (named.id != kNotNear) {
      *id = named.id;
      return true;
    }
    if (named.name.empty() || !node_index_->Find(named.name, id)) return false;
    near = *id;
    return true;
  };
  const auto keyword = [&]<size_t N>(const char (&word)[N]) {
    FastBlanks(&i);
    return Is(FastName(&i), word);
  };
  // The rest of the line: blanks and a comment at most.
  const auto end = [&] {
    FastBlanks(&i);
    if (t[i] == '#') i = LineEnd(i);
    return t[i] == '\n';
  };
  FastBlanks(&i);
  const std::string_view head = FastName(&i);
  const auto connection = [&](Stretch::Kind kind, uint32_t node, uint32_t other,
                              uint32_t flow, uint32_t return_flow) {
    out->connections.push_back(Stretch::Connection{kind, node, other, flow, return_flow,
                                                   cursor->line, cursor->line_start});
  };
  // A flow is found by its text among the stretch's flows, or read into the stretch's table.
  // A line the fast way does not take leaves no flow behind, and the texts of those it read
  // are noted only once it is taken.
  const size_t flows_before = out->flows.size();
  struct Read {
    size_t begin, size;
    uint64_t hash;
    uint32_t flow;
  };
  std::array<Read, 2> read;
  size_t reads = 0;
  const auto flow = [&](uint32_t* id) {
    FastBlanks(&i);
    if (t[i] != '{') return false;
    // Found no further than the line's end, within what this reader may read.
    const size_t close = FlowEnd(text_.substr(0, fast_end), i);
    if (close >= fast_end || t[close] != '}') return false;  // not on the line: the slow way
    const size_t begin = i, size = close + 1 - i;
    const uint64_t hash = FlowTexts::Hash(t + begin, size);
    if (out->flow_texts.Find(text_, begin, size, hash, id)) {
      i = close + 1;
      return true;
    }
    // Or read earlier on this line, and noted only once the line is taken: a callee's two
    // flows are often one text.
    for (size_t k = 0; k < reads; ++k) {
      if (read[k].hash == hash && read[k].size == size &&
          std::memcmp(t + read[k].begin, t + begin, size) == 0) {
        *id = read[k].flow;
        i = close + 1;
        return true;
      }
    }
    // Read, it ends at that '}': no name holds one.
    if (!FastFlow(&i, &out->flows, &out->items) || i != close + 1) return false;
    *id = static_cast<uint32_t>(out->flows.size() - 1);
    read[reads++] = Read{begin, size, hash, *id};
    return true;
  };
  const auto refuse = [&] {
    out->flows.Truncate(flows_before);
    return false;
  };
  uint32_t a, b, f, g;
  if (Is(head, "edge")) {
    const Named from = name(), to = name();
    if (!flow(&f) || !end() || !node(from, &a) || !node(to, &b) ||
        problem_.node_procedure[a] != problem_.node_procedure[b]) {
      return refuse();
    }
    out->edges.push_back(Edge{a, b, f});
  } else if (Is(head, "call")) {
    const Named call = name();
    if (call.name.empty() || !keyword("returns")) return false;
    const Named returns = name();
    if (!flow(&f) || !end() || !node(call, &a) || !node(returns, &b) ||
        problem_.node_procedure[a] != problem_.node_procedure[b]) {
      return refuse();
    }
    connection(Stretch::Kind::kCall, a, b, f, 0);
  } else if (Is(head, "callee")) {
    const Named call = name();
    FastBlanks(&i);
    // A callee is any procedure, its slot anywhere in the index: fetched while the flows are
    // read, as a node's is.
    const std::string_view callee = FastName(&i);
    if (callee.empty()) return false;
    proc_index_->Prefetch(callee);
    uint32_t procedure;
    if (!keyword("call") || !flow(&f) || !keyword("return") || !flow(&g) || !end() ||
        !node(call, &a) || !proc_index_->Find(callee, &procedure)) {
      return refuse();
    }
    connection(Stretch::Kind::kCallee, a, procedure, f, g);
  } else if (Is(head, "seed")) {
    const Named seed = name();
    FastBlanks(&i);
    const std::string_view fact = FastName(&i);
    if (!end() || !node(seed, &a) || problem_.procedures[problem_.node_procedure[a]].start != a ||
        !fact_index_->Find(fact, &b)) {
      return false;
    }
    connection(Stretch::Kind::kSeed, a, b, 0, 0);
  } else {
    return false;
  }
  for (size_t k = 0; k < reads; ++k) {
    out->flow_texts.Note(read[k].begin, read[k].size, read[k].hash, read[k].flow);
  }
  out->last_node = near;
  cursor->i = i + 1;
  ++cursor->line;
  cursor->line_start = cursor->i;
  return true;
}

void Parser::ReadStretch(Cursor cursor, size_t end, Stretch* out) const {
  out->clear();
  // The fast way reads the stretch's lines up to the text's last newline, checked here in the
  // stretch itself: a file changed under a reader that reads it twice (TextPaging::reload)
  // cannot take its unchecked scans past the text.
  size_t fast_end = std::min(end, terminated_);
  if (fast_end > cursor.i && text_[fast_end - 1] != '\n') fast_end = cursor.i;
  std::string_view head;
  while (cursor.i < end) {
    // Most lines are read the fast way: tried first, then past a declaration (or blank and
    // comment lines) if it is not one.
    if (FastConnect(&cursor, out, fast_end)) continue;
    if (Skip(&cursor, /*declarations=*/false, &head, end)) {
      if (!Late(static_cast<size_t>(head.data() - text_.data()), head)) continue;
      out->late = true;
      break;
    }
    if (cursor.i >= end || !FastConnect(&cursor, out, fast_end)) break;
  }
  out->stopped = cursor;
  // Checked here, while they are in the cache and on every reader's thread at once, rather
  // than all on one thread once the problem is read.
  out->flows_checked =
      ValidateFlows(out->flows, problem_.fact_names.size(), 0, out->flows.size()).ok();
}

const Stretch::Connection* Parser::Commit(const Stretch& stretch) {
  const auto base = static_cast<uint32_t>(problem_.flows.size());
  problem_.flows.Append(stretch.flows);
  if (flows_checked_ == base && stretch.flows_checked) flows_checked_ = problem_.flows.size();
  for (const Edge& e : stretch.edges) problem_.edges.push_back(Edge{e.from, e.to, base + e.flow});
  for (const Stretch::Connection& c : stretch.connections) {
    switch (c.kind) {
      case Stretch::Kind::kCall:
        if (call_site_index_[c.node] != kNoCallSite) return &c;
        AddCallSite(CallSite{.call = c.node, .return_site = c.other,
                             .call_to_return_flow = base + c.flow},
                    c.line, ColumnOfFirstWord(c.line_start));
        break;
      case Stretch::Kind::kCallee:
        if (call_site_index_[c.node] == kNoCallSite) return &c;
        AddCallee(call_site_index_[c.node], Callee{c.other, base + c.flow, base + c.return_flow});
        break;
      case Stretch::Kind::kSeed:
        problem_.seeds.emplace_back(c.node, c.other);
        break;
    }
  }
  return nullptr;
}

absl::Status Parser::SecondPass() {
  Statement s;
  size_t given_back = 0;
  const auto give_back = [&](size_t offset) {
    if (offset - given_back >= release_step_) {
      Release(given_back, offset);
      given_back = offset;
    }
  };
  // One statement the slow way, at `*cursor`: false at the end of the text.
  const auto slow = [&](Cursor* cursor) -> absl::StatusOr<bool> {
    rescan_from_ = *cursor;
    absl::StatusOr<bool> more = NextStatement(cursor, &s);
    if (!more.ok() || !*more) return more;
    if (Late(static_cast<size_t>(s[0].text.data() - text_.data()), s[0].text)) {
      return LateStatus();
    }
    if (absl::Status c = Connect(s); !c.ok()) return c;
    return true;
  };
  if (!fast_) {
    for (Cursor cursor;;) {
      give_back(cursor.i);
      absl::StatusOr<bool> more = slow(&cursor);
      if (!more.ok()) return more.status();
      if (!*more) return absl::OkStatus();
    }
  }
  const auto end_of = [&](size_t j) {
    return j + 1 < stretches_.size() ? stretches_[j + 1].i : text_.size();
  };
  // The stretches are read ahead of the one being added, on threads of their own and on this
  // one while it waits for the next; at most two per thread are read and not yet added, so the
  // stretches held stay few whatever the text's size.
  const auto threads = static_cast<unsigned>(std::min<size_t>({threads_, stretches_.size(), 64}));
  OrderedWork<Stretch> reader(stretches_.size(), threads, 2 * size_t{threads},
                              [&](size_t j, Stretch& stretch) {
                                try {
                                  Reload(stretches_[j].i, end_of(j));
                                  MakeRoom(j, end_of(j) - stretches_[j].i, &stretch);
                                  ReadStretch(stretches_[j], end_of(j), &stretch);
                                } catch (const std::bad_alloc&) {
                                  // Read none of it here: it is read again as it is added,
                                  // which says so if it fails.
                                  stretch.clear();
                                  stretch.stopped = stretches_[j];
                                }
                              });
  for (size_t j = 0; j < stretches_.size(); ++j) {
    const size_t end = end_of(j);
    Stretch* const stretch = &reader.Take(j);
    for (;;) {
      if (stretch->late) return LateStatus();
      if (const Stretch::Connection* refused = Commit(*stretch)) {
        // The slow way reads it, and says what is wrong as a statement-by-statement reading
        // would: the problem is as that reading would have it here.
        Cursor at = refused->at();
        absl::StatusOr<bool> more = slow(&at);
        if (!more.ok()) return more.status();
        return absl::InternalError(
            absl::StrFormat("%s:%d: the reader's two ways disagree", file_, refused->line));
      }
      // The fast way stopped short of the stretch's end at a line the slow way reads; then the
      // rest of the stretch, here.
      Cursor cursor = stretch->stopped;
      if (cursor.i >= end) break;
      absl::StatusOr<bool> more = slow(&cursor);
      if (!more.ok()) return more.status();
      if (!*more) break;
      ReadStretch(cursor, end, stretch);
    }
    reader.Release(j);
    give_back(end);
    RETURN_IF_ERROR(TellFlowsRead());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string_view> Parser::Name(Tokens s, size_t* i,
                                              const char* what) const {
  if (*i >= s.size()) {
    const Token& last = s.back();
    return Error(last.line, static_cast<uint32_t>(last.column + last.text.size()),
                 absl::StrFormat("expected %s", what));
  }
  const Token& t = s[*i];
  if (t.kind != Kind::kName) {
    return Error(t, absl::StrFormat("expected %s, found '%s'", what, t.text));
  }
  ++*i;
  return t.text;
}

absl::Status Parser::Keyword(Tokens s, size_t* i, std::string_view word) const {
  if (*i < s.size() && s[*i].kind == Kind::kName && s[*i].text == word) {
    ++*i;
    return absl::OkStatus();
  }
  const std::string expected = absl::StrFormat("'%s'", word);
  absl::StatusOr<std::string_view> name = Name(s, i, expected.c_str());
  if (!name.ok()) return name.status();
  if (*name != word) {
    return Error(s[*i - 1], absl::StrFormat("expected '%s', found '%s'", word, *name));
  }
  return absl::OkStatus();
}

absl::Status Parser::End(Tokens s, size_t i) const {
  if (i < s.size()) return Error(s[i], absl::StrFormat("unexpected '%s'", s[i].text));
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> Parser::Fact(Tokens s, size_t* i) const {
  absl::StatusOr<std::string_view> name = Name(s, i, "a fact");
  if (!name.ok()) return name.status();
  uint32_t id;
  if (!fact_index_->Find(*name, &id)) {
    return Error(s[*i - 1], absl::StrFormat("unknown fact '%s'", *name));
  }
  return id;
}

absl::StatusOr<uint32_t> Parser::Node(Tokens s, size_t* i) const {
  absl::StatusOr<std::string_view> name = Name(s, i, "a node");
  if (!name.ok()) return name.status();
  uint32_t id;
  if (!node_index_->Find(*name, &id)) {
    return Error(s[*i - 1], absl::StrFormat("unknown node '%s'", *name));
  }
  return id;
}

absl::StatusOr<uint32_t> Parser::Proc(Tokens s, size_t* i) const {
  absl::StatusOr<std::string_view> name = Name(s, i, "a procedure");
  if (!name.ok()) return name.status();
  uint32_t id;
  if (proc_index_->Find(*name, &id)) return id;
  return Error(s[*i - 1], absl::StrFormat("unknown procedure '%s'", *name));
}

absl::StatusOr<uint32_t> Parser::ParseFlow(Tokens s, size_t* i) {
  if (*i >= s.size() || s[*i].kind != Kind::kOpen) {
    const Token& at = *i < s.size() ? s[*i] : s.back();
    return Error(at, "expected a flow function '{ ... }'");
  }
  ++*i;
  Flow& flow = scratch_;
  flow.identity = false;
  flow.kills.clear();
  flow.gens.clear();
  flow.pairs.clear();
  bool first = true;
  while (*i < s.size() && s[*i].kind != Kind::kClose) {
    if (!first) {
      if (s[*i].kind != Kind::kComma) return Error(s[*i], "expected ',' or '}'");
      ++*i;
    }
    first = false;
    absl::StatusOr<std::string_view> word = Name(s, i, "'id', 'kill', 'gen' or a fact");
    if (!word.ok()) return word.status();
    const Token& at = s[*i - 1];
    // A keyword is never followed by '->': before one, "id", "kill" and "gen" are facts.
    const bool pair = *i < s.size() && s[*i].kind == Kind::kArrow;
    if (!pair && *word == "id") {
      flow.identity = true;
    } else if (!pair && (*word == "kill" || *word == "gen")) {
      absl::StatusOr<uint32_t> d = Fact(s, i);
      if (!d.ok()) return d.status();
      if (*word == "kill") {
        if (*d == kZeroFact) return Error(s[*i - 1], "the zero fact cannot be killed");
        flow.kills.push_back(*d);
      } else {
        flow.gens.push_back(*d);
      }
    } else {
      uint32_t from;
      if (!fact_index_->Find(*word, &from)) {
        return Error(at, absl::StrFormat("unknown fact '%s' (or expected id, kill, gen)", *word));
      }
      if (*i >= s.size() || s[*i].kind != Kind::kArrow) {
        return Error(*i < s.size() ? s[*i] : at, "expected '->' after a fact");
      }
      ++*i;
      absl::StatusOr<uint32_t> to = Fact(s, i);
      if (!to.ok()) return to.status();
      flow.pairs.emplace_back(from, *to);
    }
  }
  if (*i >= s.size()) return Error(s.back(), "expected '}' to close the flow function");
  ++*i;
  flow.Normalize();
  problem_.flows.push_back(flow);  // copies at the lists' exact sizes
  const size_t last = problem_.flows.size();
  if (flows_checked_ + 1 == last && ValidateFlows(problem_, last - 1, last).ok()) {
    flows_checked_ = last;
  }
  return static_cast<uint32_t>(problem_.flows.size() - 1);
}

absl::StatusOr<uint32_t> Parser::AddNode(const Token& name, uint32_t procedure) {
  if (problem_.node_names.size() >= kMaxNodes) {
    if (index_as_declared_ && node_index_->Contains(name.text)) {
      return Error(name, absl::StrFormat("node '%s' is declared twice", name.text));
    }
    return Error(name, "too many nodes");
  }
  const uint32_t id = static_cast<uint32_t>(problem_.node_names.size());
  problem_.node_names.emplace_back(name.text);
  if (index_as_declared_ && !node_index_->Insert(name.text, id)) {
    problem_.node_names.pop_back();
    return Error(name, absl::StrFormat("node '%s' is declared twice", name.text));
  }
  problem_.node_procedure.push_back(procedure);
  return id;
}

// First pass: facts, procedures and nodes, so that later statements may name them in any order.
absl::Status Parser::Declare(Tokens s) {
  const std::string_view head = s[0].text;
  size_t i = 1;
  if (Is(head, "ifds")) {
    absl::StatusOr<std::string_view> version = Name(s, &i, "a format version");
    if (!version.ok()) return version.status();
    if (*version != "1") {
      return Error(s[1], absl::StrFormat("unsupported format version '%s' (this reader knows 1)",
                                         *version));
    }
    return End(s, i);
  }
  if (Is(head, "zero")) {
    if (facts_declared_ || zero_.has_value()) {
      return Error(s[0], "'zero' must come once, before any 'facts'");
    }
    absl::StatusOr<std::string_view> name = Name(s, &i, "the zero fact's name");
    if (!name.ok()) return name.status();
    zero_ = std::string(s[1].text);
    return End(s, i);
  }
  if (Is(head, "facts")) {
    if (!facts_declared_) {
      facts_declared_ = true;
      const std::string_view zero = Own(zero_.has_value() ? *zero_ : "0");
      facts_.emplace(zero, kZeroFact);
      problem_.fact_names.emplace_back(zero);
    }
    if (i >= s.size()) return Error(s[0], "'facts' needs at least one name");
    for (; i < s.size(); ++i) {
      if (s[i].kind != Kind::kName) return Error(s[i], "expected a fact name");
      if (facts_.contains(s[i].text)) {
        return Error(s[i], absl::StrFormat("fact '%s' is declared twice", s[i].text));
      }
      if (problem_.fact_names.size() >= kMaxFacts) {
        return Error(s[i], absl::StrFormat("at most %d facts are supported", kMaxFacts));
      }
      facts_.emplace(Own(s[i].text), static_cast<uint32_t>(problem_.fact_names.size()));
      problem_.fact_names.emplace_back(s[i].text);
    }
    return absl::OkStatus();
  }
  if (Is(head, "procedure")) {
    absl::StatusOr<std::string_view> name = Name(s, &i, "a procedure name");
    if (!name.ok()) return name.status();
    const uint32_t id = static_cast<uint32_t>(problem_.procedures.size());
    if (!proc_index_->Insert(*name, id)) {
      return Error(s[1], absl::StrFormat("procedure '%s' is declared twice", *name));
    }
    Procedure proc{.name = std::string(*name)};
    if (absl::Status k = Keyword(s, &i, "start"); !k.ok()) return k;
    if (i >= s.size() || s[i].kind != Kind::kName) return Name(s, &i, "a start node").status();
    absl::StatusOr<uint32_t> start = AddNode(s[i++], id);
    if (!start.ok()) return start.status();
    if (absl::Status k = Keyword(s, &i, "exit"); !k.ok()) return k;
    if (i >= s.size() || s[i].kind != Kind::kName) return Name(s, &i, "an exit node").status();
    if (s[i].text == s[i - 2].text) {
      proc.start = proc.exit = *start;  // a one-node procedure
      ++i;
    } else {
      absl::StatusOr<uint32_t> exit = AddNode(s[i++], id);
      if (!exit.ok()) return exit.status();
      proc.start = *start;
      proc.exit = *exit;
    }
    problem_.procedures.push_back(std::move(proc));
    return End(s, i);
  }
  if (Is(head, "nodes")) {
    absl::StatusOr<uint32_t> proc = Proc(s, &i);
    if (!proc.ok()) return proc.status();
    if (i >= s.size()) return Error(s[0], "'nodes' needs a procedure and at least one node");
    // The names' slots in the index (far apart, past the caches) fetched before any is added.
    if (index_as_declared_) {
      for (size_t k = i; k < s.size(); ++k) node_index_->Prefetch(s[k].text);
    }
    for (; i < s.size(); ++i) {
      if (s[i].kind != Kind::kName) return Error(s[i], "expected a node name");
      absl::StatusOr<uint32_t> node = AddNode(s[i], *proc);
      if (!node.ok()) return node.status();
    }
    return absl::OkStatus();
  }
  if (head == "edge" || head == "call" || head == "callee" || head == "seed") {
    return absl::OkStatus();  // second pass
  }
  return Error(s[0], absl::StrFormat("unknown statement '%s' (expected ifds, zero, facts, "
                                     "procedure, nodes, edge, call, callee or seed)",
                                     s[0].text));
}

// Second pass: edges, call sites, callees and seeds.
absl::Status Parser::Connect(Tokens s) {
  const std::string_view head = s[0].text;
  size_t i = 1;
  if (head == "edge") {
    absl::StatusOr<uint32_t> from = Node(s, &i);
    if (!from.ok()) return from.status();
    absl::StatusOr<uint32_t> to = Node(s, &i);
    if (!to.ok()) return to.status();
    if (problem_.node_procedure[*from] != problem_.node_procedure[*to]) {
      return Error(s[2], "an edge must stay within one procedure (calls use 'call' and 'callee')");
    }
    absl::StatusOr<uint32_t> flow = ParseFlow(s, &i);
    if (!flow.ok()) return flow.status();
    problem_.edges.push_back(Edge{*from, *to, *flow});
    return End(s, i);
  }
  if (head == "call") {
    absl::StatusOr<uint32_t> call = Node(s, &i);
    if (!call.ok()) return call.status();
    if (call_site_index_[*call] != kNoCallSite) {
      return Error(s[1], absl::StrFormat("node '%s' already has a call site (line %d)",
                                         s[1].text,
                                         call_site_at_[call_site_index_[*call]].first));
    }
    if (absl::Status k = Keyword(s, &i, "returns"); !k.ok()) return k;
    absl::StatusOr<uint32_t> ret = Node(s, &i);
    if (!ret.ok()) return ret.status();
    if (problem_.node_procedure[*call] != problem_.node_procedure[*ret]) {
      return Error(s[3], "a call returns to a node of its own procedure");
    }
    absl::StatusOr<uint32_t> flow = ParseFlow(s, &i);
    if (!flow.ok()) return flow.status();
    AddCallSite(CallSite{.call = *call, .return_site = *ret, .call_to_return_flow = *flow},
                s[0].line, s[0].column);
    return End(s, i);
  }
  if (head == "callee") {
    absl::StatusOr<uint32_t> call = Node(s, &i);
    if (!call.ok()) return call.status();
    if (call_site_index_[*call] == kNoCallSite) {
      return Error(s[1], absl::StrFormat("node '%s' has no call site ('call %s returns ...' "
                                         "must come first)", s[1].text, s[1].text));
    }
    absl::StatusOr<uint32_t> proc = Proc(s, &i);
    if (!proc.ok()) return proc.status();
    if (absl::Status k = Keyword(s, &i, "call"); !k.ok()) return k;
    absl::StatusOr<uint32_t> call_flow = ParseFlow(s, &i);
    if (!call_flow.ok()) return call_flow.status();
    if (absl::Status k = Keyword(s, &i, "return"); !k.ok()) return k;
    absl::StatusOr<uint32_t> return_flow = ParseFlow(s, &i);
    if (!return_flow.ok()) return return_flow.status();
    AddCallee(call_site_index_[*call], Callee{*proc, *call_flow, *return_flow});
    return End(s, i);
  }
  if (head == "seed") {
    absl::StatusOr<uint32_t> node = Node(s, &i);
    if (!node.ok()) return node.status();
    if (problem_.procedures[problem_.node_procedure[*node]].start != *node) {
      return Error(s[1], "a seed must be at a procedure's start node");
    }
    absl::StatusOr<uint32_t> fact = Fact(s, &i);
    if (!fact.ok()) return fact.status();
    problem_.seeds.emplace_back(*node, *fact);
    return End(s, i);
  }
  return absl::OkStatus();
}

absl::StatusOr<Problem> Parser::Parse() {
  absl::StatusOr<Problem> parsed = ParseStatements();
  if (!parsed.ok() && speculative_) {
    // A declaration past where the first pass stopped, or an error anywhere: read again with a
    // whole first pass, whose problem or error is the statement-by-statement reading's. What
    // the second pass gave back is there again (TextPaging::released_text_returns).
    return Parser(text_, file_, fast_, paging_, release_step_, stretch_bytes_, threads_,
                  index_as_declared_, /*declarations_first=*/false)
        .Parse();
  }
  if (!parsed.ok() && !connecting_ && !index_as_declared_) {
    // The declarations fail: read again as each is made, so that the error is the first a
    // statement-by-statement reading meets (a node declared twice, say, before the error met
    // here). The second pass has not begun, so it has given no text back; where the first has
    // (TextPaging::reload), the new reading reloads what it reads, as this one did.
    return Parser(text_, file_, fast_, paging_, release_step_, stretch_bytes_, threads_,
                  /*index_as_declared=*/true, /*declarations_first=*/false)
        .Parse();
  }
  if (parsed.ok() || !skipped_unread_) return parsed;
  Reload(rescan_from_.i, text_.size());
  Statement s;
  for (Cursor cursor = rescan_from_; cursor.i < unread_until_;) {
    absl::StatusOr<bool> more = NextStatement(&cursor, &s);
    if (!more.ok()) return more.status();
    if (!*more) break;
  }
  return parsed;
}

absl::Status Parser::PlaceLateCallees() {
  const uint64_t total = uint64_t{problem_.callees.size()} + late_callees_.size();
  if (total > kMaxProblemCallees) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %d callees; a problem has at most %d", file_, total,
                        kMaxProblemCallees));
  }
  if (late_callees_.empty()) return absl::OkStatus();
  std::stable_sort(late_callees_.begin(), late_callees_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  PageVector<Callee> placed;
  placed.reserve(total);
  size_t late = 0;
  uint32_t begin = 0;
  for (size_t site = 0; site < problem_.call_sites.size(); ++site) {
    CallSite& c = problem_.call_sites[site];
    placed.insert(placed.end(), problem_.callees.begin() + begin,
                  problem_.callees.begin() + c.callees_end);
    begin = c.callees_end;
    for (; late < late_callees_.size() && late_callees_[late].first == site; ++late) {
      placed.push_back(late_callees_[late].second);
    }
    c.callees_end = static_cast<uint32_t>(placed.size());
  }
  problem_.callees = std::move(placed);
  std::vector<std::pair<uint32_t, Callee>>().swap(late_callees_);
  return absl::OkStatus();
}

absl::StatusOr<Problem> Parser::ParseStatements() {
  // First pass: declarations, checking every statement as it is read, so a file that is not a
  // problem fails at its first bad line. A 'nodes' statement that comes before its procedure is
  // declared is read again once every procedure is known (so its errors come after the other
  // declarations').
  Statement s;
  std::vector<std::pair<Cursor, size_t>> later;  // where each begins, and the offset past it
  const auto declare = [&](const Cursor& at, size_t next, Tokens tokens) -> absl::Status {
    unread_until_ = at.i;
    if (tokens[0].kind != Kind::kName) return Error(tokens[0], "expected a statement");
    if (Is(tokens[0].text, "nodes") && tokens.size() > 1 &&
        !proc_index_->Contains(tokens[1].text)) {
      later.emplace_back(at, next);
      return absl::OkStatus();
    }
    return Declare(tokens);
  };
  if (fast_) {
    if (absl::Status first = FirstPass(declare); !first.ok()) return first;
    if (Rereading()) {
      absl::MutexLock lock(&load_mu_);
      terminated_ = newlines_end_;
      // What the tables the first pass grew left behind goes back too (the allocator keeps
      // it): a parse that holds little of its text should hold no more than it uses.
      ReleaseFreeHeapMemory();
    }
  } else {
    stretches_.push_back(Cursor{});
    for (Cursor cursor;;) {
      unread_until_ = cursor.i;
      const Cursor at = cursor;
      absl::StatusOr<bool> more = NextStatement(&cursor, &s);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (absl::Status d = declare(at, cursor.i, s); !d.ok()) return d;
    }
  }
  unread_until_ = text_.size();
  for (auto [cursor, next] : later) {
    Reload(cursor.i, next);
    if (absl::StatusOr<bool> more = NextStatement(&cursor, &s); !more.ok()) return more.status();
    if (absl::Status d = Declare(s); !d.ok()) return d;
  }
  if (!facts_declared_) {
    problem_.fact_names.emplace_back(zero_.has_value() ? *zero_ : "0");
    facts_.emplace(Own(problem_.fact_names.back()), kZeroFact);
  }
  if (!index_as_declared_) {
    // Every node at once, into an index of the right size (no growing, and its slots fetched
    // in batches). A name declared twice makes Parse read the text again as declared, to say
    // where.
    node_index_.emplace(problem_.node_names, text_, threads_);
    if (node_index_->duplicates()) return absl::InvalidArgumentError("a node is declared twice");
  }
  call_site_index_.assign(problem_.node_names.size(), kNoCallSite);
  fact_index_.emplace(problem_.fact_names, text_);
  // The second pass's lists, sized from what the first pass counted, as long as that is no
  // more than twice the text: the counts are of lines nobody has read yet, and a file of
  // bare "call" lines must fail at its first, not ask for memory many times its size.
  const uint64_t flows = counts_.edges + counts_.calls + 2 * counts_.callees;
  const uint64_t reserved = counts_.edges * sizeof(Edge) + counts_.calls * sizeof(CallSite) +
                            counts_.callees * sizeof(Callee) + flows * 32 + counts_.arrows * 8;
  if (reserved <= 2 * text_.size()) {
    problem_.edges.reserve(counts_.edges);
    problem_.call_sites.reserve(counts_.calls);
    problem_.callees.reserve(counts_.callees);
    problem_.flows.reserve(flows, counts_.arrows);
  }
  // Second pass over the same text (it tokenized cleanly the first time).
  connecting_ = true;
  if (absl::Status second = SecondPass(); !second.ok()) return second;
  rescan_from_.i = text_.size();  // every statement tokenized: nothing to look for
  RETURN_IF_ERROR(PlaceLateCallees());
  for (size_t k = 0; k < problem_.call_sites.size(); ++k) {
    const CallSite& c = problem_.call_sites[k];
    if (problem_.CalleesOf(k).empty()) {
      const auto [line, column] = call_site_at_[k];
      return Error(line, column, absl::StrFormat("call site '%s' has no 'callee'",
                                                 problem_.node_names[c.call]));
    }
  }
  RETURN_IF_ERROR(TellFlowsRead());
  if (absl::Status v = Validate(problem_, std::max(flows_told_, flows_checked_)); !v.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s", file_, v.message()));
  }
  return std::move(problem_);
}

void AppendFlow(const Problem& p, const FlowView& f, std::string* out) {
  std::vector<std::string> items;
  if (f.identity) items.push_back("id");
  for (uint32_t d : f.kills) items.push_back(absl::StrCat("kill ", p.fact_names[d]));
  for (uint32_t d : f.gens) items.push_back(absl::StrCat("gen ", p.fact_names[d]));
  for (const auto& [a, b] : f.pairs) {
    items.push_back(absl::StrCat(p.fact_names[a], " -> ", p.fact_names[b]));
  }
  absl::StrAppend(out, "{");
  for (size_t i = 0; i < items.size(); ++i) absl::StrAppend(out, i ? ", " : "", items[i]);
  absl::StrAppend(out, "}");
}

}  // namespace

bool IsValidName(std::string_view name) {
  if (name.empty() || !IsValidUtf8(name)) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i])) return false;
    if (name[i] == '-' && i + 1 < name.size() && name[i + 1] == '>') return false;
  }
  return true;
}

absl::StatusOr<Problem> ParseText(std::string_view text, std::string_view filename) {
  return Parser(text, filename).Parse();
}

absl::StatusOr<Problem> ParseText(std::string_view text, std::string_view filename,
                                  const TextPaging& paging) {
  const bool reread = paging.reload.has_value();
  return Parser(text, filename, /*fast=*/true, &paging,
                reread ? kRereadBytes : kReleaseStepBytes, reread ? kRereadBytes : kStretchBytes)
      .Parse();
}

namespace internal {
absl::StatusOr<Problem> ParseTextStatementByStatement(std::string_view text,
                                                      std::string_view filename) {
  return Parser(text, filename, /*fast=*/false).Parse();
}

absl::StatusOr<Problem> ParseTextInStretches(std::string_view text, std::string_view filename,
                                             size_t stretch_bytes, unsigned threads,
                                             bool declarations_first, size_t* first_pass_end) {
  Parser parser(text, filename, /*fast=*/true, /*paging=*/nullptr, /*release_step=*/0,
                stretch_bytes != 0 ? stretch_bytes : kStretchBytes, threads,
                /*index_as_declared=*/false, declarations_first);
  absl::StatusOr<Problem> parsed = parser.Parse();
  if (first_pass_end != nullptr) *first_pass_end = std::min(parser.unread_from(), text.size());
  return parsed;
}

absl::StatusOr<Problem> ParseTextOverwritingConsumed(
    std::string_view text, std::string_view filename, size_t stretch_bytes, unsigned threads,
    bool reread,
    std::optional<absl::FunctionRef<absl::Status(FlowTable&, size_t, size_t)>> flows_read) {
  // Read twice, the text is not there at first: the parser reloads every byte it reads.
  std::string copy = reread ? std::string(text.size(), '\0') : std::string(text);
  const auto overwrite = [&](size_t begin, size_t end) {
    std::fill(copy.begin() + static_cast<ptrdiff_t>(begin),
              copy.begin() + static_cast<ptrdiff_t>(end), '\0');
  };
  const auto restore = [&](size_t begin, size_t end) {
    std::copy(text.begin() + static_cast<ptrdiff_t>(begin),
              text.begin() + static_cast<ptrdiff_t>(end),
              copy.begin() + static_cast<ptrdiff_t>(begin));
  };
  TextPaging paging{.release = overwrite, .reload = std::nullopt, .flows_read = flows_read};
  if (reread) paging.reload.emplace(restore);
  return Parser(copy, filename, /*fast=*/true, &paging, /*release_step=*/1,
                stretch_bytes != 0 ? stretch_bytes : reread ? kRereadBytes : kStretchBytes,
                threads)
      .Parse();
}
}  // namespace internal

std::string WriteText(const Problem& p) {
  std::string out = "ifds 1\n";
  // Node names as Abseil's view (which is not std::string_view here), for StrAppend.
  const auto node = [&p](uint32_t n) {
    const std::string_view name = p.node_names[n];
    return absl::string_view(name.data(), name.size());
  };
  absl::StrAppend(&out, "zero ", p.fact_names[0], "\n");
  for (size_t d = 1; d < p.fact_names.size(); d += 16) {
    absl::StrAppend(&out, "facts");
    for (size_t k = d; k < std::min(p.fact_names.size(), d + 16); ++k) {
      absl::StrAppend(&out, " ", p.fact_names[k]);
    }
    absl::StrAppend(&out, "\n");
  }
  std::vector<std::vector<uint32_t>> members(p.procedures.size());
  for (uint32_t n = 0; n < p.node_names.size(); ++n) members[p.node_procedure[n]].push_back(n);
  for (size_t q = 0; q < p.procedures.size(); ++q) {
    const Procedure& proc = p.procedures[q];
    absl::StrAppend(&out, "procedure ", proc.name, " start ", node(proc.start), " exit ",
                    node(proc.exit), "\n");
    std::vector<uint32_t> rest;
    for (uint32_t n : members[q]) {
      if (n != proc.start && n != proc.exit) rest.push_back(n);
    }
    for (size_t k = 0; k < rest.size(); k += 16) {
      absl::StrAppend(&out, "nodes ", proc.name);
      for (size_t j = k; j < std::min(rest.size(), k + 16); ++j) {
        absl::StrAppend(&out, " ", node(rest[j]));
      }
      absl::StrAppend(&out, "\n");
    }
  }
  for (const Edge& e : p.edges) {
    absl::StrAppend(&out, "edge ", node(e.from), " ", node(e.to), " ");
    AppendFlow(p, p.flows[e.flow], &out);
    absl::StrAppend(&out, "\n");
  }
  for (size_t site = 0; site < p.call_sites.size(); ++site) {
    const CallSite& c = p.call_sites[site];
    absl::StrAppend(&out, "call ", node(c.call), " returns ", node(c.return_site),
                    " ");
    AppendFlow(p, p.flows[c.call_to_return_flow], &out);
    absl::StrAppend(&out, "\n");
    for (const Callee& callee : p.CalleesOf(site)) {
      absl::StrAppend(&out, "callee ", node(c.call), " ",
                      p.procedures[callee.procedure].name, " call ");
      AppendFlow(p, p.flows[callee.call_flow], &out);
      absl::StrAppend(&out, " return ");
      AppendFlow(p, p.flows[callee.return_flow], &out);
      absl::StrAppend(&out, "\n");
    }
  }
  for (const auto& [n, d] : p.seeds) {
    absl::StrAppend(&out, "seed ", node(n), " ", p.fact_names[d], "\n");
  }
  return out;
}

}  // namespace sluice::ifds
