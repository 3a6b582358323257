// The text and binary formats: errors point at file:line:column, round trips keep the
// solution, and a seeded corpus of mangled inputs never crashes the parsers.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sluice/ifds/binary_format.h"
#include "sluice/ifds/generator.h"
#include "sluice/ifds/output.h"
#include "sluice/ifds/reference_solver.h"
#include "sluice/ifds/text_format.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace sluice::ifds {
namespace {

using ::sluice::testing::StatusIs;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

constexpr char kSmall[] =
    "ifds 1\n"
    "facts a b\n"
    "procedure main start s exit e\n"
    "nodes main n1\n"
    "edge s n1 {gen a}\n"
    "edge n1 e {id, kill a, a -> b}\n"
    "seed s 0\n";

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<Problem> p = ParseText(text, "in.ifds");
  return p.ok() ? "" : std::string(p.status().message());
}

TEST(TextFormatTest, ParsesAndSolvesASmallProblem) {
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(kSmall, "in.ifds"));
  EXPECT_EQ(p.fact_count(), 3u);
  EXPECT_EQ(p.node_count(), 3u);
  EXPECT_EQ(FormatTsv(p, SolveReference(p), false), "e\tb\nn1\ta\n");
  EXPECT_EQ(FormatTsv(p, SolveReference(p), true), "e\t0\ne\tb\nn1\t0\nn1\ta\ns\t0\n");
  EXPECT_EQ(FormatJson(p, SolveReference(p), false),
            "{\"results\":[{\"node\":\"e\",\"facts\":[\"b\"]},"
            "{\"node\":\"n1\",\"facts\":[\"a\"]}]}\n");
}

TEST(TextFormatTest, ErrorsNameFileLineAndColumn) {
  EXPECT_EQ(ErrorOf("facts a\nbogus x\n"),
            "in.ifds:2:1: unknown statement 'bogus' (expected ifds, zero, facts, procedure, "
            "nodes, edge, call, callee or seed)");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nedge s e {id, kill q}\n"),
            "in.ifds:2:20: unknown fact 'q'");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nedge s x {}\n"), "in.ifds:2:8: unknown node 'x'");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nedge s e {id\n"),
            "in.ifds:2:11: expected '}' to close the flow function");
  EXPECT_EQ(ErrorOf("facts a\nprocedure m start s exit e\nedge s e {a b}\n"),
            "in.ifds:3:13: expected '->' after a fact");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nseed e 0\n"),
            "in.ifds:2:6: a seed must be at a procedure's start node");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nprocedure q start s exit f\n"),
            "in.ifds:2:19: node 's' is declared twice");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\ncall s returns e {}\n"),
            "in.ifds:2:1: call site 's' has no 'callee'");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\n\n \t call s returns e {}\n"),
            "in.ifds:3:4: call site 's' has no 'callee'");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\n# a comment\n  nodes m a b\n  nodes m a\n"),
            "in.ifds:4:11: node 'a' is declared twice");
  EXPECT_EQ(ErrorOf("ifds 2\n"), "in.ifds:1:6: unsupported format version '2' (this reader knows 1)");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nedge s e {id}\x01\n"),
            "in.ifds:2:14: unexpected character '\\x01'");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nprocedure p start t exit u\nedge s t {id}\n"),
            "in.ifds:3:8: an edge must stay within one procedure (calls use 'call' and 'callee')");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nedge s e {kill 0}\n"),
            "in.ifds:2:16: the zero fact cannot be killed");
  EXPECT_EQ(ErrorOf("facts \xff\n"), "in.ifds:1:7: a name is not valid UTF-8");
}

// The reader takes a fast way through the statements that fill files (the first pass skips
// edges, calls and callees unread; the second reads plain ASCII ones straight from the text),
// and every error stays the one a statement-by-statement reading gives, at the same place.
TEST(TextFormatTest, TheFastWayGivesTheSameErrorsInTheSameOrder) {
  // A line the first pass skipped that does not tokenize comes before a later declaration's
  // error, and before any error of the second pass.
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nedge s e {id} \x01\nprocedure m start a exit b\n"),
            "in.ifds:2:15: unexpected character '\\x01'");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nedge s x {}\ncall s returns e {} \x02\n"),
            "in.ifds:3:21: unexpected character '\\x02'");
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nedge s e {id}\nedge s e {\xc3}\n"),
            "in.ifds:3:11: a name is not valid UTF-8");
  // A declaration's error before the bad line is still first.
  EXPECT_EQ(ErrorOf("procedure m start s exit e\nprocedure m start a exit b\nedge s e {\x01}\n"),
            "in.ifds:2:11: procedure 'm' is declared twice");
  // Each statement the fast way reads, wrong in each way it can be, errs as before.
  const std::string head = "facts a b\nprocedure m start s exit e\nnodes m n\nprocedure p start t exit u\n";
  EXPECT_EQ(ErrorOf(head + "edge s n {a -> c}\n"), "in.ifds:5:16: unknown fact 'c'");
  EXPECT_EQ(ErrorOf(head + "edge s n {a b}\n"), "in.ifds:5:13: expected '->' after a fact");
  EXPECT_EQ(ErrorOf(head + "edge s n {id,}\n"),
            "in.ifds:5:14: expected 'id', 'kill', 'gen' or a fact, found '}'");
  EXPECT_EQ(ErrorOf(head + "edge s n {id} x\n"), "in.ifds:5:15: unexpected 'x'");
  EXPECT_EQ(ErrorOf(head + "edge s n {id # a comment\n"),
            "in.ifds:5:11: expected '}' to close the flow function");
  EXPECT_EQ(ErrorOf(head + "call s return n {}\n"), "in.ifds:5:8: expected 'returns', found 'return'");
  EXPECT_EQ(ErrorOf(head + "call n returns e {}\ncall n returns e {}\ncallee n p call {} return {}\n"),
            "in.ifds:6:6: node 'n' already has a call site (line 5)");
  EXPECT_EQ(ErrorOf(head + "callee n p call {} return {}\n"),
            "in.ifds:5:8: node 'n' has no call site ('call n returns ...' must come first)");
  EXPECT_EQ(ErrorOf(head + "call n returns e {}\ncallee n q call {} return {}\n"),
            "in.ifds:6:10: unknown procedure 'q'");
  EXPECT_EQ(ErrorOf(head + "call n returns e {}\ncallee n p call {a -> b}\n"),
            "in.ifds:6:25: expected 'return'");
  // A 'nodes' line the first pass declares at once when all is well, and otherwise reads
  // token by token: each thing wrong with one errs as before, and a good one after a bad one
  // is not declared first.
  const std::string procedure = "procedure m start s exit e\n";
  EXPECT_EQ(ErrorOf(procedure + "nodes m a {\n"), "in.ifds:2:11: expected a node name");
  EXPECT_EQ(ErrorOf(procedure + "nodes m a -> b\n"), "in.ifds:2:11: expected a node name");
  EXPECT_EQ(ErrorOf(procedure + "nodes q a\n"), "in.ifds:2:7: unknown procedure 'q'");
  EXPECT_EQ(ErrorOf(procedure + "nodes m\n"),
            "in.ifds:2:1: 'nodes' needs a procedure and at least one node");
  EXPECT_EQ(ErrorOf(procedure + "nodes { a\n"), "in.ifds:2:7: expected a procedure, found '{'");
  EXPECT_EQ(ErrorOf(procedure + "nodes m a s\nnodes m b\n"),
            "in.ifds:2:11: node 's' is declared twice");
  EXPECT_EQ(ErrorOf(procedure + "nodes m a {\nnodes m a\n"), "in.ifds:2:11: expected a node name");
  // And what it reads is what the slow way reads: comments, blanks, CRLF, names like keywords.
  ASSERT_OK_AND_ASSIGN(
      Problem p, ParseText("facts id kill\r\nprocedure m start s exit e\r\n"
                           "edge s e\t{ id ,kill kill,id->kill }  # note\r\nseed s 0", "in.ifds"));
  ASSERT_EQ(p.edges.size(), 1u);
  const FlowView flow = p.flows[p.edges[0].flow];
  EXPECT_TRUE(flow.identity);
  EXPECT_THAT(flow.kills, ::testing::ElementsAre(2u));
  EXPECT_THAT(flow.pairs, ::testing::ElementsAre(std::make_pair(1u, 2u)));
}

// The first pass skips connecting lines unread, counting them and each kind by its first word.
// After lines of every length from 1 to 200 bytes (each ending in every place within 64 bytes,
// a scan's step), of every kind, blank and comment lines among them, a declaration's error
// names its own line, as a statement-by-statement reading does; without the error, the
// problem read is the same, every edge, call site and callee in it.
TEST(TextFormatTest, ADeclarationAfterSkippedLinesOfEveryLengthNamesItsLine) {
  const std::string head =
      "facts a b\nprocedure m start s exit e\nnodes m n c r\nprocedure p start t exit u\n";
  std::string body;
  int lines = 4;
  int edges = 0;
  for (int length = 1; length <= 200; ++length) {
    // An edge padded with blanks and a comment to `length` bytes, newline included, where it
    // can be that short; blank and comment lines of that length otherwise.
    std::string line = "edge s n {a -> b}";
    if (static_cast<int>(line.size()) + 1 <= length) {
      line += std::string(static_cast<size_t>(length) - line.size() - 1, ' ');
      if (length > 40) line.replace(30, 2, "# ");
      ++edges;
    } else {
      line = std::string(static_cast<size_t>(length - 1), ' ');
      if (length > 2) line[length / 2] = '#';
    }
    body += line + "\n";
    ++lines;
    if (length % 50 == 0) {
      body += length == 100 ? "call c returns r {id}\ncallee c p call {} return {b -> a}\n"
                            : "seed s a\n";
      lines += length == 100 ? 2 : 1;
    }
  }
  const std::string bad = head + body + "procedure m start a exit b\n";
  const std::string expected =
      absl::StrCat("in.ifds:", lines + 1, ":11: procedure 'm' is declared twice");
  EXPECT_EQ(ErrorOf(bad), expected);
  EXPECT_THAT(internal::ParseTextStatementByStatement(bad, "in.ifds"),
              StatusIs(Code::kInvalidArgument, HasSubstr(expected)));
  ASSERT_OK_AND_ASSIGN(Problem fast, ParseText(head + body, "in.ifds"));
  ASSERT_OK_AND_ASSIGN(Problem slow,
                       internal::ParseTextStatementByStatement(head + body, "in.ifds"));
  EXPECT_EQ(fast.edges.size(), static_cast<size_t>(edges));
  EXPECT_EQ(fast.call_sites.size(), 1u);
  EXPECT_EQ(fast.callees.size(), 1u);
  EXPECT_EQ(fast.seeds.size(), 3u);
  EXPECT_EQ(WriteText(fast), WriteText(slow));
}

// The second pass reads stretches of the text on several threads and adds them in order. At
// every stretch size and thread count it reads what a statement-by-statement reading does:
// the same problem, or the same first error, wherever the stretches' ends fall (on blank and
// comment lines too), and whatever the fast way leaves to the slow one in the middle of a
// stretch (names past ASCII). So does a first pass that stops at the first connection, where
// declarations, errors and statements of no kind come after it.
TEST(TextFormatTest, StretchesReadOnManyThreadsReadWhatOneReadingDoes) {
  ASSERT_OK_AND_ASSIGN(Problem generated, Generate({.procedures = 30, .facts = 8, .seeds = 3,
                                                    .front_end_shape = true, .scope = 4}));
  const std::string text = WriteText(generated);
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  const auto joined = [](const std::vector<std::string>& v) { return absl::StrJoin(v, "\n"); };
  std::mt19937_64 rng(20261205);
  std::vector<std::pair<std::string, std::string>> variants = {{"as written", text}};
  {
    std::vector<std::string> spaced;
    for (const std::string& line : lines) {
      spaced.push_back(line);
      if (rng() % 3 == 0) spaced.push_back(rng() % 2 == 0 ? "" : "  # a comment");
    }
    variants.emplace_back("with blank and comment lines", joined(spaced));
  }
  // The first call line, again near the end; the first callee line, before its call.
  size_t first_call = 0, first_callee = 0;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (first_call == 0 && lines[k].starts_with("call ")) first_call = k;
    if (first_callee == 0 && lines[k].starts_with("callee ")) first_callee = k;
  }
  ASSERT_GT(first_call, 0u);
  {
    std::vector<std::string> twice = lines;
    twice.insert(twice.end() - 3, lines[first_call]);
    variants.emplace_back("a call site given twice", joined(twice));
    std::vector<std::string> early = lines;
    early.erase(early.begin() + static_cast<ptrdiff_t>(first_callee));
    early.insert(early.begin() + static_cast<ptrdiff_t>(first_call), lines[first_callee]);
    variants.emplace_back("a callee before its call site", joined(early));
    std::vector<std::string> bad = lines;
    bad[bad.size() / 2] += " x";
    bad[bad.size() * 3 / 4] += " \x01";
    variants.emplace_back("a bad line in the middle", joined(bad));
    // Nodes are indexed once every one is declared: a node declared twice is still the error
    // where it is, before a later declaration's (or a line's that does not tokenize).
    size_t first_nodes = 0;
    while (!lines[first_nodes].starts_with("nodes ")) ++first_nodes;
    std::vector<std::string> twice_declared = lines;
    twice_declared.insert(twice_declared.begin() + static_cast<ptrdiff_t>(first_nodes) + 2,
                          lines[first_nodes]);
    twice_declared[twice_declared.size() * 3 / 4] = "procedure";
    variants.emplace_back("a node declared twice, a bad declaration later", joined(twice_declared));
    twice_declared[twice_declared.size() * 3 / 4] = "nodes \x01";
    variants.emplace_back("a node declared twice, a bad line later", joined(twice_declared));
    // A 'nodes' statement before its procedure, read again once every procedure is declared.
    std::vector<std::string> early_nodes = lines;
    const std::string moved = early_nodes[first_nodes];
    early_nodes.erase(early_nodes.begin() + static_cast<ptrdiff_t>(first_nodes));
    early_nodes.insert(early_nodes.begin() + 1, moved);
    variants.emplace_back("nodes before their procedure", joined(early_nodes));
    // Declarations past the first connection, where a first pass that stops there has not
    // read them: the second pass meets them, and the text is read again whole.
    size_t first_edge = 0;
    while (!lines[first_edge].starts_with("edge ")) ++first_edge;
    std::vector<std::string> late = lines;
    late.insert(late.end() - 1, "facts late_fact");
    variants.emplace_back("a declaration after the connections", joined(late));
    std::vector<std::string> moved_down = lines;
    const std::vector<std::string> declarations(moved_down.begin() + 3,
                                                moved_down.begin() + first_edge);
    moved_down.erase(moved_down.begin() + 3, moved_down.begin() + first_edge);
    moved_down.insert(moved_down.end() - 1, declarations.begin(), declarations.end());
    variants.emplace_back("procedures declared after their edges", joined(moved_down));
    std::vector<std::string> unknown = lines;
    unknown.insert(unknown.end() - 1, "frobnicate x");
    variants.emplace_back("an unknown statement after the connections", joined(unknown));
    std::vector<std::string> late_twice = lines;
    late_twice.insert(late_twice.end() - 1, lines[first_nodes]);
    variants.emplace_back("a node declared again after the connections", joined(late_twice));
  }
  // A node renamed past ASCII wherever it is named: its lines go the slow way.
  std::string renamed = text;
  const std::string node(generated.node_names[generated.procedures[3].start]);
  for (size_t at = 0; (at = renamed.find(" " + node + " ", at)) != std::string::npos;) {
    renamed.replace(at + 1, node.size(), "n\xc3\xa9");
  }
  variants.emplace_back("a name past ASCII", renamed);
  for (const auto& [what, variant] : variants) {
    const absl::StatusOr<Problem> one = internal::ParseTextStatementByStatement(variant, "s.ifds");
    for (const size_t stretch : {size_t{1}, size_t{13}, size_t{100}, size_t{1000}, size_t{0}}) {
      for (const unsigned threads : {1u, 2u, 5u}) {
        // The first pass stopping at the first connection, or reading everything.
        for (const bool declarations_first : {true, false}) {
          const absl::StatusOr<Problem> read = internal::ParseTextInStretches(
              variant, "s.ifds", stretch, threads, declarations_first);
          ASSERT_EQ(read.status(), one.status())
              << what << ", stretches of " << stretch << " on " << threads
              << " threads, declarations first " << declarations_first;
          if (one.ok()) {
            ASSERT_EQ(WriteText(*read), WriteText(*one)) << what << ", stretches of " << stretch;
          }
        }
        for (const bool reread : {false, true}) {
          const absl::StatusOr<Problem> read =
              internal::ParseTextOverwritingConsumed(variant, "s.ifds", stretch, threads, reread);
          ASSERT_EQ(read.status(), one.status()) << what << ", stretches of " << stretch << " on "
                                                 << threads << " threads, reread " << reread;
          if (one.ok()) {
            ASSERT_EQ(WriteText(*read), WriteText(*one)) << what << ", stretches of " << stretch;
          }
        }
      }
    }
    if (what == "as written" || what == "with blank and comment lines" ||
        what == "a name past ASCII" || what == "nodes before their procedure" ||
        what == "a declaration after the connections" ||
        what == "procedures declared after their edges") {
      EXPECT_OK(one.status()) << what;
    } else {
      EXPECT_THAT(one, StatusIs(Code::kInvalidArgument)) << what;
    }
    if (what.starts_with("a node declared twice") ||
        what == "a node declared again after the connections") {
      EXPECT_THAT(one.status().message(), ::testing::HasSubstr("is declared twice")) << what;
    }
  }
}

// A front end lists its declarations first: the first pass reads up to the first connection
// (or to the blank and comment lines before it, where a piece begins among them) and no
// further, in pieces of any size; told to read every line, it reads them all.
TEST(TextFormatTest, AFirstPassStopsAtTheFirstConnection) {
  ASSERT_OK_AND_ASSIGN(Problem generated, Generate({.procedures = 30, .facts = 8, .seeds = 3,
                                                    .front_end_shape = true, .scope = 4}));
  const std::string text = WriteText(generated);
  const size_t first_edge = text.find("\nedge ") + 1;
  ASSERT_GT(first_edge, 1u);
  std::string commented = text;
  commented.insert(first_edge, "# the edges\n\n");
  for (const std::string& variant : {text, commented}) {
    const size_t connection = variant.find("\nedge ") + 1;
    for (const size_t stretch : {size_t{1}, size_t{13}, size_t{1000}, size_t{0}}) {
      for (const unsigned threads : {1u, 2u}) {
        size_t end = 0;
        ASSERT_OK(internal::ParseTextInStretches(variant, "f.ifds", stretch, threads, true, &end)
                      .status());
        EXPECT_GE(end, first_edge) << "stretches of " << stretch << " on " << threads;
        EXPECT_LE(end, connection) << "stretches of " << stretch << " on " << threads;
        ASSERT_OK(internal::ParseTextInStretches(variant, "f.ifds", stretch, threads, false, &end)
                      .status());
        EXPECT_EQ(end, variant.size()) << "stretches of " << stretch << " on " << threads;
      }
    }
  }
}

// Many nodes are indexed on several threads, each filling a part of the index: every node is
// found, wherever its slot falls, and a node declared twice is the error a statement-by-
// statement reading gives, whichever parts its two names fall in, short names or long (with
// long names among them, this many take an index of tags, short names too).
TEST(TextFormatTest, ManyNodesIndexedOnManyThreadsAreEachFoundOnce) {
  constexpr int kNodes = 70000;
  std::string text = "ifds 1\nfacts a\nprocedure p start s exit e\n";
  std::string edges;
  std::string previous = "s";
  for (int i = 0; i < kNodes; ++i) {
    const std::string node = i % 97 == 0 ? absl::StrCat("a_node_past_sixteen_bytes_", i)
                                         : absl::StrCat("n", i);
    absl::StrAppend(&text, "nodes p ", node, "\n");
    absl::StrAppend(&edges, "edge ", previous, " ", node, i % 2 == 0 ? " {id}\n" : " {a -> a}\n");
    previous = node;
  }
  absl::StrAppend(&edges, "edge ", previous, " e {id}\n");
  const std::string body = edges + "seed s 0\n";
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"every node once", text + body},
      {"a short name twice", text + "nodes p n65000\n" + body},
      {"a long name twice", text + "nodes p a_node_past_sixteen_bytes_97\n" + body},
      {"the first name again last", text + "nodes p n1\n" + body},
  };
  for (const auto& [what, variant] : variants) {
    const absl::StatusOr<Problem> one = internal::ParseTextStatementByStatement(variant, "m.ifds");
    if (what == "every node once") {
      ASSERT_OK(one.status());
    } else {
      EXPECT_THAT(one.status().message(), HasSubstr("is declared twice")) << what;
    }
    for (const unsigned threads : {1u, 2u, 5u}) {
      const absl::StatusOr<Problem> read =
          internal::ParseTextOverwritingConsumed(variant, "m.ifds", 0, threads);
      ASSERT_EQ(read.status(), one.status()) << what << " on " << threads << " threads";
      if (one.ok()) {
        ASSERT_EQ(WriteText(*read), WriteText(*one)) << what;
      }
    }
  }
}

// What the first pass counts unread only sizes the second pass's lists when the text could

// A name of at most 12 bytes is its own key in the index; a longer one is found by a hash of
// its bytes and then read (and so is every name of a large index with longer names, one of
// tags: these 70000 nodes; the facts and procedures are few). Names of every size from 1 to 40 bytes, many alike in their first
// 8, 12 or 16 bytes or prefixes of each other, for nodes, procedures and facts: each is found
// as itself (the problem solves as the same problem with short names does), on any number of
// threads and as a statement-by-statement reading finds it, and one given twice or one not
// declared is the error that reading gives.
TEST(TextFormatTest, NamesOfEverySizeAreFoundAsThemselves) {
  constexpr int kNodes = 70000;  // past the size the index is filled on many threads from
  std::mt19937_64 random(41);
  // The long name of short name i: a shared start of 0 to 36 bytes and i's digits, so that
  // names of the same size differ in their last bytes only.
  const auto long_name = [](const std::string& kind, int i) {
    const size_t shared = static_cast<size_t>(i) % 37;
    return kind + std::string(shared, 'x') + "_" + std::to_string(i);
  };
  std::string names_text[2], edges_text[2];
  constexpr int kFacts = 40;
  for (int named = 0; named < 2; ++named) {
    const auto fact = [&](int k) { return named ? long_name("f", k) : absl::StrCat("v", k); };
    const auto node = [&](int i) { return named ? long_name("n", i) : absl::StrCat("n", i); };
    const auto proc = [&](int k) { return named ? long_name("p", k) : absl::StrCat("p", k); };
    std::string& text = names_text[named];
    text = "ifds 1\nfacts";
    for (int k = 1; k < kFacts; ++k) absl::StrAppend(&text, " ", fact(k));
    text += "\n";
    for (int k = 0; k < 4; ++k) {
      absl::StrAppend(&text, "procedure ", proc(k), " start ", proc(k), ".s exit ", proc(k),
                      ".e\n");
    }
    for (int i = 0; i < kNodes; ++i) absl::StrAppend(&text, "nodes ", proc(i % 4), " ", node(i), "\n");
  }
  // The same edges and flows for both, by index.
  for (int i = 0; i + 4 < kNodes; ++i) {
    const int from = i, to = i + 4;  // in one procedure
    const int a = 1 + static_cast<int>(random() % (kFacts - 1));
    const int b = 1 + static_cast<int>(random() % (kFacts - 1));
    for (int named = 0; named < 2; ++named) {
      const auto fact = [&](int k) { return named ? long_name("f", k) : absl::StrCat("v", k); };
      const auto node = [&](int n) { return named ? long_name("n", n) : absl::StrCat("n", n); };
      absl::StrAppend(&edges_text[named], "edge ", node(from), " ", node(to), " {",
                      i % 3 == 0 ? "id, " : "", fact(a), " -> ", fact(b), ", gen ", fact(b),
                      i % 5 == 0 ? absl::StrCat(", kill ", fact(a)) : "", "}\n");
    }
  }
  for (int named = 0; named < 2; ++named) {
    const auto proc = [&](int k) { return named ? long_name("p", k) : absl::StrCat("p", k); };
    const auto node = [&](int n) { return named ? long_name("n", n) : absl::StrCat("n", n); };
    for (int k = 0; k < 4; ++k) {
      absl::StrAppend(&edges_text[named], "edge ", proc(k), ".s ", node(k), " {id}\nedge ",
                      node(kNodes - 4 + k), " ", proc(k), ".e {id}\nseed ", proc(k), ".s 0\n");
    }
  }
  const std::string short_text = names_text[0] + edges_text[0];
  const std::string long_text = names_text[1] + edges_text[1];
  ASSERT_OK_AND_ASSIGN(const Problem short_names, ParseText(short_text, "s.ifds"));
  const Solution expected = SolveReference(short_names);
  ASSERT_GT(expected.facts.size(), size_t{kNodes});

  // Names given twice, each alike in its first bytes to others, and names never declared.
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"every name once", long_text},
      {"a 13-byte node twice", names_text[1] + "nodes " + long_name("p", 0) + " " +
                                   long_name("n", 46) + "\n" + edges_text[1]},
      {"a 40-byte node twice", names_text[1] + "nodes " + long_name("p", 0) + " " +
                                   long_name("n", 36) + "\n" + edges_text[1]},
      {"a 12-byte node twice", names_text[1] + "nodes " + long_name("p", 0) + " " +
                                   long_name("n", 9) + "\n" + edges_text[1]},
      {"a long procedure twice", names_text[1] + "procedure " + long_name("p", 3) +
                                     " start q.s exit q.e\n" + edges_text[1]},
      {"an undeclared node alike in its first 36 bytes",
       long_text + "edge " + long_name("n", 36) + " " + long_name("n", 36) + "a {id}\n"},
      {"an undeclared fact alike in its first 16 bytes",
       long_text + "edge " + long_name("n", 16) + " " + long_name("n", 20) + " {" +
           long_name("f", 16) + "a -> " + long_name("f", 16) + "}\n"},
  };
  for (const auto& [what, variant] : variants) {
    const absl::StatusOr<Problem> one = internal::ParseTextStatementByStatement(variant, "m.ifds");
    if (what == "every name once") {
      ASSERT_OK(one.status());
      EXPECT_EQ(SolveReference(*one), expected);
    } else if (what.find("twice") != std::string::npos) {
      EXPECT_THAT(one.status().message(), HasSubstr("is declared twice")) << what;
    } else {
      EXPECT_THAT(one.status().message(), HasSubstr("unknown")) << what;
    }
    for (const unsigned threads : {1u, 2u, 5u}) {
      const absl::StatusOr<Problem> read =
          internal::ParseTextOverwritingConsumed(variant, "m.ifds", 0, threads);
      ASSERT_EQ(read.status(), one.status()) << what << " on " << threads << " threads";
      if (one.ok()) {
        EXPECT_EQ(SolveReference(*read), expected) << what << " on " << threads << " threads";
        EXPECT_EQ(WriteText(*read), WriteText(*one)) << what;
      }
    }
  }
}
// The reader looks a node's name up first among the nodes beside the one named last (Parser::
// NearNode): it finds the node itself, never a neighbor whose name differs only inside it,
// from the first node to the last, going forward, back or far, and an unknown name alike in
// size and last byte to a neighbor's is still unknown. Read the fast way on any threads, a
// problem is the one a statement-by-statement reading makes.
TEST(TextFormatTest, ANodeNamedBesideTheLastIsItselfAndNoNeighbor) {
  constexpr int kNodes = 300;
  // Neighbors of one size differing in one byte inside their names, every tenth longer.
  const auto node = [](int i) {
    return i % 10 == 9 ? absl::StrCat("n", i / 10, "x", i % 10, "z")
                       : absl::StrCat("n", i / 10, "x", i % 10);
  };
  std::string text = "ifds 1\nfacts a b\nprocedure p start s exit e\nnodes p";
  for (int i = 0; i < kNodes; ++i) absl::StrAppend(&text, " ", node(i));
  text += "\n";
  std::mt19937_64 random(47);
  // Forward, the same, back, forward by two, and far, from the first node to the last.
  const int steps[] = {1, 0, -1, 2, 97, -150};
  int at = 0;
  absl::StrAppend(&text, "edge s ", node(0), " {id, 0 -> a}\n");
  for (int k = 0; k < 2000; ++k) {
    const int next = std::clamp(at + steps[random() % 6], 0, kNodes - 1);
    absl::StrAppend(&text, "edge ", node(at), " ", node(next), " {id",
                    k % 7 == 0 ? ", a -> b" : "", "}\n");
    at = next;
  }
  absl::StrAppend(&text, "edge ", node(kNodes - 1), " e {id}\nseed s 0\n");
  for (const bool unknown : {false, true}) {
    // An unknown name after the first node, the same size and last byte as its neighbor's.
    const std::string variant =
        unknown ? absl::StrCat(text, "edge ", node(0), " m0x1 {id}\n") : text;
    const absl::StatusOr<Problem> one = internal::ParseTextStatementByStatement(variant, "n.ifds");
    if (unknown) {
      EXPECT_THAT(one.status().message(), HasSubstr("unknown node 'm0x1'"));
    } else {
      ASSERT_OK(one.status());
    }
    for (const unsigned threads : {1u, 2u, 3u}) {
      const absl::StatusOr<Problem> read =
          internal::ParseTextOverwritingConsumed(variant, "n.ifds", 0, threads);
      ASSERT_EQ(read.status(), one.status()) << threads << " threads";
      if (one.ok()) {
        EXPECT_EQ(WriteText(*read), WriteText(*one)) << threads << " threads";
      }
    }
  }
}

// hold them: a flood of bare statements fails at its first line, as it always did.
TEST(TextFormatTest, LinesCountedUnreadDoNotSizeMoreThanTheTextCouldHold) {
  std::string calls;
  for (int i = 0; i < 200000; ++i) calls += "call\n";
  EXPECT_EQ(ErrorOf(calls), "in.ifds:1:5: expected a node");
  const std::string arrows = "edge #" + std::string(1 << 20, '>') + "\n";
  EXPECT_EQ(ErrorOf(arrows), "in.ifds:1:5: expected a node");
}

// TextPaging::flows_read is told of every flow once, in order, a stretch's at a time, and the
// parser reads no flow once told: given back there (their pairs read as zeros then),
// the problem read has the flows' count and all the rest a reading without it has, while the
// hook saw the flows themselves. Its error stops the parse with it. LoadProblem tells a text
// file's flows as it reads them, and a binary file's at once.
TEST(TextFormatTest, FlowsAreToldOnceInOrderAndNotReadAgain) {
  ASSERT_OK_AND_ASSIGN(const Problem generated, Generate({.seed = 5, .procedures = 3000,
                                                          .facts = 32, .front_end_shape = true}));
  const std::string text = WriteText(generated);
  ASSERT_GT(text.size(), size_t{6} << 20);  // stretches of 2 MiB
  ASSERT_OK_AND_ASSIGN(const Problem plain, ParseText(text, "f.ifds"));
  FlowTable seen;  // the lists as they were told
  std::vector<std::pair<size_t, size_t>> ranges;
  const auto told = [&](FlowTable& flows, size_t first, size_t last) -> absl::Status {
    ranges.emplace_back(first, last);
    for (size_t f = first; f < last; ++f) seen.push_back(flows[f]);
    flows.Release(first, last);
    return absl::OkStatus();
  };
  const auto keep = [](size_t, size_t) {};
  // `expected`: the problem read the same way without being told (flows read again are
  // shared within a stretch of the text: the stretches decide which).
  const auto check_ranges = [&](size_t at_least, const Problem& expected) {
    EXPECT_GE(ranges.size(), at_least);
    size_t next = 0;
    for (const auto& [first, last] : ranges) {
      EXPECT_EQ(first, next);
      EXPECT_LT(first, last);
      next = last;
    }
    EXPECT_EQ(next, expected.flows.size());
    EXPECT_EQ(seen, expected.flows);
  };
  TextPaging paging{.release = keep, .reload = std::nullopt};
  paging.flows_read.emplace(told);
  ASSERT_OK_AND_ASSIGN(const Problem read, ParseText(text, "f.ifds", paging));
  check_ranges(3, plain);
  ASSERT_EQ(read.flows.size(), plain.flows.size());
  EXPECT_EQ(read.flows.pair_count(), plain.flows.pair_count());
  EXPECT_EQ(read.node_names, plain.node_names);
  ASSERT_EQ(read.edges.size(), plain.edges.size());
  for (size_t e = 0; e < plain.edges.size(); ++e) {
    ASSERT_EQ(read.edges[e].flow, plain.edges[e].flow) << e;
  }
  ASSERT_EQ(read.call_sites.size(), plain.call_sites.size());
  // The pairs went back a page at a time, but for the partial pages at the ranges' ends.
  const absl::Span<const uint32_t> pairs = read.flows.pair_entries();
  EXPECT_GT(std::count(pairs.begin(), pairs.end(), 0u),
            static_cast<ptrdiff_t>(pairs.size() * 9 / 10));
  const Problem& with_flows = plain;
  Problem without_flows = read;
  without_flows.flows = with_flows.flows;
  EXPECT_EQ(WriteText(without_flows), WriteText(with_flows));

  int calls = 0;
  const auto refuse = [&](FlowTable&, size_t, size_t) {
    ++calls;
    return absl::ResourceExhaustedError("no room for the lists");
  };
  TextPaging refusing{.release = keep, .reload = std::nullopt};
  refusing.flows_read.emplace(refuse);
  EXPECT_THAT(ParseText(text, "f.ifds", refusing),
              StatusIs(Code::kResourceExhausted, HasSubstr("no room for the lists")));
  EXPECT_EQ(calls, 1);

  const testing::ScopedTempDir dir("sluice-told");
  for (const bool binary : {false, true}) {
    const std::string path = dir.File(binary ? "told.bin" : "told.ifds");
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    const std::string bytes = binary ? WriteBinary(plain) : text;
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    ASSERT_EQ(std::fclose(f), 0);
    for (const bool reread : {false, true}) {
      ranges.clear();
      seen = {};
      ASSERT_OK(LoadProblem(path, {.reread = reread, .flows_read = told}).status());
      ASSERT_OK_AND_ASSIGN(const Problem expected, LoadProblem(path, {.reread = reread}));
      check_ranges(binary ? 1 : 3, expected);
      EXPECT_EQ(ranges.size() == 1, binary);
    }
  }
}

// A pipe is read a whole megabyte before the reader decides the input is no problem file: a
// NUL byte anywhere in it is found however the writer's pieces arrive.
TEST(LoadProblemTest, APipesFirstMegabyteIsCheckedWhole) {
  const testing::ScopedTempDir dir("sluice-fifo");
  const std::string fifo = dir.File("problem.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string text = kSmall;
  while (text.size() < 100000) text += "# a comment line to make the file longer\n";
  text += std::string("# \0\n", 4);  // a NUL past the first pipe buffer, in a comment
  text += "# the end\n";
  std::thread writer([&] {
    std::FILE* f = std::fopen(fifo.c_str(), "w");
    if (f == nullptr) return;
    for (size_t at = 0; at < text.size(); at += 1000) {  // many small writes
      std::fwrite(text.data() + at, 1, std::min<size_t>(1000, text.size() - at), f);
      std::fflush(f);
    }
    std::fclose(f);
  });
  absl::StatusOr<Problem> loaded = LoadProblem(fifo);
  writer.join();
  EXPECT_THAT(loaded, StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("neither format"));
  std::remove(fifo.c_str());
}

// A large file is read in ranges on several threads: what they read is the file, byte for byte
// and in order (a last line's error names the same line and column), wherever the ranges'
// ends fall.
// A file that cannot be opened says why, as the system does.
TEST(LoadProblemTest, AFileThatCannotBeOpenedSaysWhy) {
  EXPECT_THAT(LoadProblem("/nonexistent-sluice-dir/p.ifds"),
              StatusIs(Code::kNotFound, HasSubstr("cannot open the file: No such file")));
}

TEST(LoadProblemTest, AFileThatSaysItHasNoBytesIsReadToItsEnd) {
  // A file of /proc says so and has some: they are read, as a pipe's are, and are no problem.
  const absl::StatusOr<Problem> status = LoadProblem("/proc/self/status");
  EXPECT_THAT(status, StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(std::string(status.status().message()), HasSubstr("/proc/self/status:1:1:"));
  // A file that has none is the empty problem, as ever.
  const testing::ScopedTempDir dir("sluice-empty");
  const std::string empty = dir.File("empty.ifds");
  std::FILE* f = std::fopen(empty.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_EQ(LoadProblem(empty).status(), ParseText("", empty).status());
}

TEST(LoadProblemTest, ALargeFileReadInRangesIsTheFile) {
  ASSERT_OK_AND_ASSIGN(Problem generated, Generate({.procedures = 12, .seeds = 2}));
  const std::vector<std::string> lines = absl::StrSplit(WriteText(generated), '\n');
  std::string text;
  for (const std::string& line : lines) {
    // Each statement followed by short comment lines: 48 MiB or more in all.
    text += line + "\n";
    for (size_t k = 0; k < (size_t{16} << 20) / lines.size(); ++k) text += "#\n";
  }
  const testing::ScopedTempDir dir("sluice-large");
  const std::string path = dir.File("large.ifds");
  const auto write = [&](const std::string& bytes) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    ASSERT_EQ(std::fclose(f), 0);
  };
  write(text);
  for (const bool reread : {false, true}) {
    ASSERT_OK_AND_ASSIGN(Problem loaded, LoadProblem(path, {.reread = reread}));
    EXPECT_EQ(WriteText(loaded), WriteText(generated)) << "reread " << reread;
  }
  // A declaration at the end, past where a first pass that stops at the first connection
  // stopped: the text is read again, the pages the second pass gave back by then coming back
  // from the system's cache.
  write(text + "facts late_fact\n");
  ASSERT_OK_AND_ASSIGN(const Problem late, LoadProblem(path));
  ASSERT_OK_AND_ASSIGN(const Problem expected, internal::ParseTextStatementByStatement(
                                                   text + "facts late_fact\n", path));
  EXPECT_EQ(WriteText(late), WriteText(expected));
  EXPECT_EQ(late.fact_names.back(), "late_fact");
  text += "  unknown statement\n";
  write(text);
  const size_t last_line = lines.size() * (1 + (size_t{16} << 20) / lines.size()) + 1;
  for (const bool reread : {false, true}) {
    const absl::StatusOr<Problem> failed = LoadProblem(path, {.reread = reread});
    EXPECT_THAT(failed, StatusIs(Code::kInvalidArgument));
    EXPECT_EQ(failed.status(), ParseText(text, path).status());
    EXPECT_THAT(failed.status().message(),
                HasSubstr(absl::StrFormat(":%d:3: unknown statement", last_line)));
  }
}

// A file is read in place (mapped): one that shrinks or is written again while it is read is
// DataLoss, never a crash or a problem made of two versions of the file.
TEST(LoadProblemTest, AFileThatChangesWhileItIsReadIsDataLoss) {
  ASSERT_OK_AND_ASSIGN(Problem generated, Generate({.procedures = 400, .seeds = 2}));
  const testing::ScopedTempDir dir("sluice-changed");
  const std::string path = dir.File("changing.ifds");
  for (const bool binary : {false, true}) {
    const std::string bytes = binary ? WriteBinary(generated) : WriteText(generated);
    ASSERT_GT(bytes.size(), size_t{64} << 10);
    const auto write = [&] {
      std::FILE* f = std::fopen(path.c_str(), "w");
      ASSERT_NE(f, nullptr);
      ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
      ASSERT_EQ(std::fclose(f), 0);
    };
    for (const bool reread : {false, true}) {
      write();
      ASSERT_OK_AND_ASSIGN(Problem unchanged,
                           internal::LoadProblem(path, {.reread = reread}, [] {}));
      EXPECT_EQ(WriteText(unchanged), WriteText(generated));
      // Cut to a page and a half once mapped: reading past that would raise SIGBUS.
      const absl::StatusOr<Problem> shrunk =
          internal::LoadProblem(path, {.reread = reread}, [&] {
            ASSERT_EQ(truncate(path.c_str(), 6144), 0);
          });
      EXPECT_THAT(shrunk, StatusIs(Code::kDataLoss, HasSubstr(path + ": the file changed while "
                                                              "it was read")))
          << "binary " << binary << ", reread " << reread;
      // The same bytes written again, at another time.
      write();
      const absl::StatusOr<Problem> rewritten =
          internal::LoadProblem(path, {.reread = reread}, [&] {
            const struct timespec times[2] = {{.tv_sec = 1, .tv_nsec = 0},
                                              {.tv_sec = 1, .tv_nsec = 0}};
            ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
          });
      EXPECT_THAT(rewritten, StatusIs(Code::kDataLoss, HasSubstr("changed while it was read")))
          << "binary " << binary << ", reread " << reread;
    }
  }
}

TEST(TextFormatTest, DeclarationsMayFollowTheirUses) {
  const std::string text =
      "call ms returns me {id}\n"
      "callee ms p call {id} return {id}\n"
      "procedure main start ms exit me\n"
      "procedure p start ps exit ps\n"
      "seed ms 0\n";
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(text, "in.ifds"));
  EXPECT_EQ(p.call_sites.size(), 1u);
  EXPECT_EQ(p.procedures[1].start, p.procedures[1].exit) << "a one-node procedure";
}

TEST(TextFormatTest, NodesMayComeBeforeTheirProcedure) {
  const std::string text =
      "nodes m a\n"
      "procedure m start s exit e\n"
      "edge s a {}\n"
      "edge a e {}\n"
      "seed s 0\n";
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(text, "in.ifds"));
  EXPECT_EQ(p.node_count(), 3u);
  EXPECT_EQ(FormatTsv(p, SolveReference(p), true), "a\t0\ne\t0\ns\t0\n");
  // A procedure declared nowhere is still an error, at the statement that names it.
  EXPECT_EQ(ErrorOf("nodes q a\nprocedure m start s exit e\n"),
            "in.ifds:1:7: unknown procedure 'q'");
}

// A flow written again on a later line (as a front end lists the same facts in scope along a
// procedure's edges) is read once and shared by its edges; a text that differs anywhere, or a
// line the fast way does not take, gets a flow of its own. The problem solves as the
// statement-by-statement reading's, which shares none.
TEST(TextFormatTest, AFlowWrittenAgainIsSharedByItsEdges) {
  const std::string text =
      "facts a b c\n"
      "procedure m start s exit e\n"
      "procedure q start qs exit qe\n"
      "procedure r start rs exit re\n"
      "nodes m n1 n2 n3 n4\n"
      "edge s n1 {gen a, a -> b}\n"
      "edge n1 n2 {id, a -> b, b -> c}\n"
      "edge n2 n3 {id, a -> b, b -> c}\n"
      "edge n3 n4 {id, a -> b, b -> a}\n"
      "call n4 returns e {id, a -> b, b -> c}\n"
      "callee n4 q call {id, a -> b, b -> c} return {id, a -> b, b -> c}\n"
      "callee n4 r call {c -> a, kill b} return {c -> a, kill b}\n"
      "edge qs qe {id, a -> b, b -> c}  # the same, a comment after\n"
      "seed s 0\n";
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(text, "in.ifds"));
  ASSERT_OK_AND_ASSIGN(Problem slowly, internal::ParseTextStatementByStatement(text, "in.ifds"));
  // Ten flows written; four texts: {gen a, a -> b}, {id, a -> b, b -> c}, {id, ..., b -> a},
  // and {c -> a, kill b}, new on its line and written again there.
  EXPECT_EQ(slowly.flows.size(), 10u);
  EXPECT_EQ(p.flows.size(), 4u);
  EXPECT_EQ(p.CalleesOf(0)[1].call_flow, p.CalleesOf(0)[1].return_flow);
  EXPECT_EQ(p.edges[1].flow, p.edges[2].flow);
  EXPECT_NE(p.edges[2].flow, p.edges[3].flow);
  EXPECT_EQ(p.call_sites[0].call_to_return_flow, p.edges[1].flow);
  EXPECT_EQ(p.CalleesOf(0)[0].call_flow, p.edges[1].flow);
  EXPECT_EQ(p.CalleesOf(0)[0].return_flow, p.edges[1].flow);
  EXPECT_EQ(WriteText(p), WriteText(slowly));
  EXPECT_EQ(FormatTsv(p, SolveReference(p), false),
            FormatTsv(slowly, SolveReference(slowly), false));
  // Lines refused after some of a flow, or a whole one, was read (a fact past ASCII: the slow
  // way reads them) leave nothing behind: not the pair read before it in that flow, which the
  // next flow built would take, nor the whole call flow before the return flow it refuses.
  const std::string refused =
      "facts a b \xc3\xa9\n"
      "procedure m start s exit e\n"
      "procedure q start qs exit qe\n"
      "nodes m n c r\n"
      "edge s n {b -> b, a -> \xc3\xa9}\n"
      "edge n c {a -> b}\n"
      "call c returns r {a -> b}\n"
      "callee c q call {b -> a, a -> b} return {\xc3\xa9 -> a}\n"
      "edge r e {b -> a}\n"
      "edge qs qe {a -> b}\n"
      "seed s 0\n";
  ASSERT_OK_AND_ASSIGN(Problem q, ParseText(refused, "in.ifds"));
  ASSERT_OK_AND_ASSIGN(Problem q_slowly,
                       internal::ParseTextStatementByStatement(refused, "in.ifds"));
  EXPECT_EQ(WriteText(q), WriteText(q_slowly));
  // Seven written; six kept: the refused lines' three (read the slow way), the edge n -> c's
  // (which the call shares), r -> e's, and qs -> qe's (a line read the slow way empties the
  // cache of the stretch's flows).
  EXPECT_EQ(q_slowly.flows.size(), 7u);
  EXPECT_EQ(q.flows.size(), 6u);
  for (const Edge& edge : q.edges) ASSERT_LT(edge.flow, q.flows.size());
}

// A call site's callees lie together in the problem, in the text's order, wherever their lines
// are: after a later call site's (kept aside until every line is read) as well as right after
// their call's. Both ways read them so, on any stretches, and the text written back lists each
// site's callees after it.
TEST(TextFormatTest, CalleesOfACallSiteListedLaterStayItsOwnInTheirOrder) {
  const std::string text =
      "facts a b\n"
      "procedure m start s exit e\n"
      "procedure p start ps exit pe\n"
      "procedure q start qs exit qe\n"
      "procedure r start rs exit re\n"
      "nodes m c1 c2 c3\n"
      "edge s c1 {id}\n"
      "call c1 returns c2 {id}\n"
      "callee c1 p call {a -> a} return {id}\n"
      "call c2 returns c3 {id}\n"
      "callee c2 q call {b -> b} return {id}\n"
      "callee c1 q call {a -> b} return {id}\n"
      "call c3 returns e {id}\n"
      "callee c3 r call {id} return {id}\n"
      "callee c1 r call {b -> a} return {id}\n"
      "callee c2 p call {id} return {a -> b}\n"
      "seed s 0\n";
  ASSERT_OK_AND_ASSIGN(Problem slowly, internal::ParseTextStatementByStatement(text, "in.ifds"));
  const auto procedures = [](const Problem& p, size_t site) {
    std::vector<std::string> names;
    for (const Callee& c : p.CalleesOf(site)) names.push_back(p.procedures[c.procedure].name);
    return names;
  };
  ASSERT_EQ(slowly.call_sites.size(), 3u);
  EXPECT_THAT(procedures(slowly, 0), ::testing::ElementsAre("p", "q", "r"));
  EXPECT_THAT(procedures(slowly, 1), ::testing::ElementsAre("q", "p"));
  EXPECT_THAT(procedures(slowly, 2), ::testing::ElementsAre("r"));
  EXPECT_EQ(slowly.flows[slowly.CalleesOf(0)[1].call_flow].pairs.size(), 1u);
  ASSERT_OK(Validate(slowly));
  for (const size_t stretch : {size_t{1}, size_t{40}, size_t{0}}) {
    for (const unsigned threads : {1u, 2u}) {
      ASSERT_OK_AND_ASSIGN(Problem read,
                           internal::ParseTextOverwritingConsumed(text, "in.ifds", stretch,
                                                                  threads, false));
      EXPECT_EQ(WriteText(read), WriteText(slowly)) << "stretches of " << stretch;
      for (size_t site = 0; site < 3; ++site) {
        EXPECT_EQ(procedures(read, site), procedures(slowly, site)) << "site " << site;
      }
    }
  }
  // Written back, each site's callees follow it: read again, the same problem.
  ASSERT_OK_AND_ASSIGN(Problem again, ParseText(WriteText(slowly), "again.ifds"));
  EXPECT_EQ(WriteText(again), WriteText(slowly));
  EXPECT_EQ(FormatTsv(again, SolveReference(again), false),
            FormatTsv(slowly, SolveReference(slowly), false));
}

// The fast way notes the items of the flows it reads by their text and finds them again: an
// item found means what reading it means, whatever its spacing, its neighbours, its words
// (texts that differ past their eighth byte, keywords and facts named like them) or its place
// (the text's last bytes, where fewer than 16 may be read).
TEST(TextFormatTest, AnItemFoundByItsTextMeansWhatReadingItMeans) {
  std::string text =
      "facts v1 v10 v11 id gen kill a_fact_with_a_long_name\n"
      "procedure m start s exit e\n"
      "nodes m n1 n2 n3 n4 n5 n6 n7 n8\n"
      "edge s n1 {gen v1, gen v10, gen id}\n"
      "edge n1 n2 {v1 -> v10, v10 -> v11, id -> gen}\n"
      "edge n2 n3 {v1 -> v11, v10 -> v10,id -> kill, kill id}\n"
      "edge n3 n4 { v1 -> v10 , v11 -> v1, id, gen gen}\n"
      "edge n4 n5 {v1 -> v11, v10 -> v10, kill v10, gen -> id}\n"
      "edge n5 n6 {id, v1 -> a_fact_with_a_long_name, a_fact_with_a_long_name -> v11}\n"
      "edge n6 n7 {id, kill v1, v1->v10}\n"
      "edge n7 n8 {v1 -> v10, v10 -> v11, id -> gen}\n"
      "seed s 0\n"
      "edge n8 e {v1->v10, id}\n";
  for (size_t k = 0; k < 2; ++k) {
    ASSERT_OK_AND_ASSIGN(Problem p, ParseText(text, "in.ifds"));
    ASSERT_OK_AND_ASSIGN(Problem slowly, internal::ParseTextStatementByStatement(text, "in.ifds"));
    EXPECT_EQ(WriteText(p), WriteText(slowly));
    EXPECT_EQ(FormatTsv(p, SolveReference(p), false),
              FormatTsv(slowly, SolveReference(slowly), false));
    // Each flow as written: the items of the first edges, found later, are no other items.
    ASSERT_EQ(p.edges.size(), 9u + k);
    const FlowView n4_n5 = p.flows[p.edges[4].flow];
    EXPECT_FALSE(n4_n5.identity);
    EXPECT_EQ(std::vector<uint32_t>(n4_n5.kills.begin(), n4_n5.kills.end()),
              std::vector<uint32_t>({2}));
    EXPECT_EQ(n4_n5.pairs.size(), 3u);
    // The same items again, the last line's now within 16 bytes of the text's end.
    text += "edge n8 n1 {v1 -> v11}\n";
  }
}

TEST(TextFormatTest, FactsNamedLikeKeywordsWorkInEveryPlace) {
  // Before '->' a word is a fact: "id -> gen" maps the fact id to the fact gen.
  const std::string text =
      "facts id kill gen\n"
      "procedure m start s exit e\n"
      "nodes m a\n"
      "edge s a {gen id, gen kill}\n"
      "edge a e {id -> gen, kill -> id, kill id}\n"
      "seed s 0\n";
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(text, "in.ifds"));
  const std::string expected = "a\tid\na\tkill\ne\tgen\ne\tid\n";
  EXPECT_EQ(FormatTsv(p, SolveReference(p), false), expected);
  ASSERT_OK_AND_ASSIGN(Problem again, ParseText(WriteText(p), "again.ifds"));
  EXPECT_EQ(FormatTsv(again, SolveReference(again), false), expected);
}

TEST(TextFormatTest, OnlyValidUtf8IsAName) {
  ASSERT_OK(ParseText("facts \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x91 "
                      "\xf4\x8f\xbf\xbf\n", "in.ifds")
                .status());
  for (const char* bad : {"\xc0\xaf", "\xe0\x80\x80", "\xed\xa0\x80", "\xf0\x80\x80\x80",
                          "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\x80", "\xe2\x82"}) {
    EXPECT_EQ(ErrorOf(absl::StrCat("facts a", bad, "\n")), "in.ifds:1:7: a name is not valid UTF-8")
        << absl::CHexEscape(bad);
    EXPECT_FALSE(IsValidName(absl::StrCat("a", bad)));
  }
}

TEST(FormatsTest, TextAndBinaryRoundTripsKeepTheSolution) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    GeneratorOptions o;
    o.seed = seed;
    o.procedures = 5;
    o.recursion = 0.5;
    ASSERT_OK_AND_ASSIGN(Problem original, Generate(o));
    const std::string expected = FormatTsv(original, SolveReference(original), true);
    ASSERT_OK_AND_ASSIGN(Problem from_text, ParseText(WriteText(original), "t.ifds"));
    EXPECT_EQ(FormatTsv(from_text, SolveReference(from_text), true), expected);
    ASSERT_OK_AND_ASSIGN(Problem from_binary, ParseBinary(WriteBinary(original), "b.ifds"));
    EXPECT_EQ(FormatTsv(from_binary, SolveReference(from_binary), true), expected);
    EXPECT_EQ(WriteBinary(from_binary), WriteBinary(original)) << "binary is exact";
    ASSERT_OK_AND_ASSIGN(Problem nameless, ParseBinary(WriteBinary(original, false), "b.ifds"));
    EXPECT_EQ(SolveReference(nameless), SolveReference(original));
    EXPECT_EQ(nameless.node_names[3], "n3");
  }
}

// The answer as the writers' contract has it, made the plain way: every pair as two strings,
// sorted bytewise.
std::vector<std::pair<std::string, std::string>> PlainOrder(const Problem& p, const Solution& s,
                                                            bool include_zero) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& [n, d] : s.facts) {
    if (d != kZeroFact || include_zero) rows.emplace_back(p.node_names[n], p.fact_names[d]);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

std::string Json(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string Collected(absl::FunctionRef<absl::Status(OutputSink)> write) {
  std::string out;
  absl::Status s = write([&out](std::string_view block) {
    EXPECT_LE(block.size(), kOutputBlockBytes);
    out.append(block);
    return absl::OkStatus();
  });
  EXPECT_OK(s);
  return out;
}

TEST(OutputTest, AnyPiecesOnAnyThreadsRankedAheadOrNotWriteTheAnswerThePlainOrderHas) {
  GeneratorOptions options;
  options.seed = 11;
  options.procedures = 60;
  options.facts = 40;
  ASSERT_OK_AND_ASSIGN(Problem p, Generate(options));
  const Solution solved = SolveReference(p);
  ASSERT_GT(solved.facts.size(), 1000u);
  // Names that sort apart from their ids, need escaping in JSON, or outgrow a block (the
  // node holding the fewest facts: its lines are a block each).
  std::vector<uint32_t> held(p.node_count());
  for (const auto& [n, d] : solved.facts) ++held[n];
  uint32_t fewest = 0;
  for (uint32_t n = 0; n < p.node_count(); ++n) {
    if (held[n] > 0 && (held[fewest] == 0 || held[n] < held[fewest])) fewest = n;
  }
  p.node_names.Set(fewest, std::string(kOutputBlockBytes + 5, 'z'));
  p.node_names.Set(fewest == 1 ? 4 : 1, "a\"quote");
  p.node_names.Set(fewest == 2 ? 5 : 2, "back\\slash\x01");
  p.fact_names[2] = "0-before-the-rest";
  p.fact_names[3] = std::string(300, 'f');
  // The same pairs out of order and with one repeated: the writers take them as a set.
  Solution shuffled = solved;
  std::mt19937_64 random(5);
  std::shuffle(shuffled.facts.begin(), shuffled.facts.end(), random);
  shuffled.facts.push_back(shuffled.facts.front());
  // Sorted, with pairs given twice in place (a zero fact's among them).
  Solution repeated;
  for (const auto& pair : solved.facts) {
    repeated.facts.push_back(pair);
    if (pair.second == kZeroFact || repeated.facts.size() % 7 == 0) repeated.facts.push_back(pair);
  }
  for (const bool zero : {false, true}) {
    const auto rows = PlainOrder(p, solved, zero);
    std::string tsv, json = "{\"results\":[";
    for (size_t i = 0; i < rows.size(); ++i) {
      tsv += absl::StrCat(rows[i].first, "\t", rows[i].second, "\n");
      const bool new_node = i == 0 || rows[i - 1].first != rows[i].first;
      if (new_node) {
        if (i > 0) json += "]},";
        json += absl::StrCat("{\"node\":", Json(rows[i].first), ",\"facts\":[");
      } else {
        json += ",";
      }
      json += Json(rows[i].second);
    }
    json += rows.empty() ? "]" : "]}]";
    json += ",\"extra\":1}\n";
    EXPECT_EQ(FormatTsv(p, solved, zero), tsv);
    EXPECT_EQ(FormatJson(p, solved, zero, "\"extra\":1"), json);
    // Ranked ahead, as `sluice solve` ranks them while a daemon or a GPU solves.
    const OutputOrder order = RankOutput(p);
    EXPECT_EQ(Collected([&](OutputSink sink) { return WriteTsv(p, solved, zero, sink, &order); }),
              tsv);
    EXPECT_EQ(Collected([&](OutputSink sink) {
                return WriteJson(p, solved, zero, "\"extra\":1", sink, &order);
              }),
              json);
    for (const Solution* s : {&solved, static_cast<const Solution*>(&shuffled),
                              static_cast<const Solution*>(&repeated)}) {
      for (const uint64_t piece : {uint64_t{1}, uint64_t{7}, uint64_t{500}, uint64_t{1} << 40}) {
        for (const int threads : {1, 2, 5}) {
          // Where each node's pairs begin, in 4 bytes a node, and in 8 as for 2^32 pairs.
          const uint64_t narrow_up_to = threads == 2 ? 0 : UINT32_MAX;
          SCOPED_TRACE(absl::StrCat("zero ", zero, ", shuffled ", s == &shuffled, ", repeated ",
                                    s == &repeated, ", pieces of ", piece, ", threads ",
                                    threads, ", narrow up to ", narrow_up_to));
          const internal::OutputPieces pieces{.pairs_per_piece = piece,
                                              .threads = threads,
                                              .narrow_starts_up_to = narrow_up_to};
          EXPECT_EQ(Collected([&](OutputSink sink) {
                      return internal::WriteTsv(p, *s, zero, pieces, sink);
                    }),
                    tsv);
          EXPECT_EQ(Collected([&](OutputSink sink) {
                      return internal::WriteJson(p, *s, zero, "\"extra\":1", pieces, sink);
                    }),
                    json);
        }
      }
    }
  }
}

// A node's facts are written in the order of their names, whatever the ids: marked by rank
// where the problem has few facts (at most 256, the zero fact among them), sorted where it has
// more. The sizes either side of that line, names in the reverse of their ids' order, and
// nodes holding every fact, none, one, or a seeded draw.
TEST(OutputTest, ANodesFactsAreWrittenInTheirNamesOrderWithFewFactsOrMany) {
  std::mt19937_64 random(41);
  for (const uint32_t facts : {2u, 64u, 65u, 255u, 256u, 257u, 600u}) {
    SCOPED_TRACE(absl::StrCat(facts, " facts"));
    Problem p;
    p.fact_names = {"0"};
    for (uint32_t d = 1; d < facts; ++d) {
      p.fact_names.push_back(absl::StrFormat("f%04d", facts - d));
    }
    Solution s;
    for (uint32_t n = 0; n < 40; ++n) {
      p.node_names.push_back(absl::StrCat("n", n));
      for (uint32_t d = 0; d < facts; ++d) {
        const bool holds = n == 0 || (n == 2 && d == facts - 1) || (n > 2 && random() % 3 == 0);
        if (holds) s.facts.emplace_back(n, d);
      }
    }
    for (const bool zero : {false, true}) {
      std::string tsv;
      for (const auto& [node, fact] : PlainOrder(p, s, zero)) {
        absl::StrAppend(&tsv, node, "\t", fact, "\n");
      }
      EXPECT_EQ(FormatTsv(p, s, zero), tsv);
    }
  }
}

// Many names are ranked in two halves, sorted and merged side by side: the order is the
// names' bytewise order whatever their sizes, and the ranks its inverse. Names that share
// their first 16 bytes, or are prefixes of each other, are among them.
TEST(OutputTest, ManyNamesAreRankedInTheirBytewiseOrder) {
  std::mt19937_64 random(29);
  Problem p;
  std::vector<std::string> names;
  for (size_t count : {size_t{100000}, size_t{65537}}) {
    names.clear();
    p.node_names = {};
    for (size_t i = 0; i < count; ++i) {
      const uint64_t word = random();
      switch (word % 4) {
        case 0:  // short, with a shared start
          names.push_back(absl::StrCat("p", word % 5000, ".", i));
          break;
        case 1:  // past 16 bytes, alike in its first 16
          names.push_back(absl::StrCat("a_long_shared_prefix.", word % 100, "#", i));
          break;
        case 2:  // a prefix of others, or 16 bytes exactly
          names.push_back(absl::StrFormat("%016d", i));
          break;
        default:  // bytes past ASCII
          names.push_back(absl::StrCat("\xc3\xa9", word % 1000, "_", i));
          break;
      }
    }
    for (const std::string& name : names) p.node_names.push_back(name);
    p.fact_names = {"0", "b", "a"};
    const OutputOrder order = RankOutput(p);
    std::vector<uint32_t> expected(count);
    for (uint32_t i = 0; i < count; ++i) expected[i] = i;
    std::sort(expected.begin(), expected.end(),
              [&](uint32_t x, uint32_t y) { return names[x] < names[y]; });
    ASSERT_EQ(order.node_order.size(), count);
    for (size_t r = 0; r < count; ++r) {
      ASSERT_EQ(order.node_order[r], expected[r]) << count << " names, rank " << r;
    }
    EXPECT_THAT(std::vector<uint32_t>(order.fact_order.begin(), order.fact_order.end()),
                ::testing::ElementsAre(0, 2, 1));
  }
}

// Names alike in their first 12 or 24 bytes are ordered by the bytes after; a name given twice,
// an empty name, or one holding NUL bytes (which no problem file may hold, but a Problem built
// in code can) is ranked in its place too, and the ranking ends.
TEST(OutputTest, NamesAlikeForLongOrGivenTwiceAreRankedInOrder) {
  std::mt19937_64 random(43);
  for (size_t count : {size_t{12}, size_t{70000}}) {
    SCOPED_TRACE(absl::StrCat(count, " names"));
    Problem p;
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) {
      const uint64_t word = random();
      if (i > 0 && word % 3 == 0) {
        names.push_back(names[word % i]);  // a twin
        continue;
      }
      if (word % 11 == 0) {  // empty, or NUL bytes where padding would be
        names.push_back(std::string(word % 30, '\0') + (word % 2 == 0 ? "" : "x"));
        continue;
      }
      const std::string prefix(word % 2 == 0 ? 12 : 24, 'x');
      names.push_back(absl::StrCat(prefix, std::string(word % 40, 'y'), word % 7));
    }
    for (const std::string& name : names) p.node_names.push_back(name);
    p.fact_names = {"0"};
    const OutputOrder order = RankOutput(p);
    ASSERT_EQ(order.node_order.size(), count);
    std::vector<bool> seen(count, false);
    for (size_t r = 0; r < count; ++r) {
      const uint32_t i = order.node_order[r];
      ASSERT_LT(i, count);
      ASSERT_FALSE(seen[i]) << "rank " << r;
      seen[i] = true;
      if (r > 0) {
        ASSERT_LE(names[order.node_order[r - 1]], names[i]) << "rank " << r;
      }
    }
  }
}

// Many nodes' runs of pairs are found on two threads, each taking half the nodes: the answer is
// the plain order's, with nodes holding no pair, or only the zero fact's, or the zero fact's and
// more, on either side of the halves' line, where each node's run begins kept in 4 bytes and
// in 8.
TEST(OutputTest, ManyNodesRunsFoundOnTwoThreadsWriteThePlainOrder) {
  constexpr uint32_t kNodes = 70001;
  Problem p;
  // Names ranked apart from their ids.
  for (uint32_t n = 0; n < kNodes; ++n) p.node_names.push_back(absl::StrCat("n", kNodes - n));
  p.fact_names = {"0", "c", "a", "b"};
  std::mt19937_64 random(47);
  Solution s;
  for (uint32_t n = 0; n < kNodes; ++n) {
    const uint64_t draw = random();
    const bool near_the_line = n > kNodes / 2 - 200 && n < kNodes / 2 + 200;
    switch (near_the_line ? n % 4 : draw % 4) {
      case 0:  // none
        break;
      case 1:
        s.facts.emplace_back(n, kZeroFact);
        break;
      case 2:
        s.facts.emplace_back(n, kZeroFact);
        [[fallthrough]];
      default:
        for (uint32_t d = 1; d < 4; ++d) {
          if ((draw >> (8 + d)) % 2 == 0 || d == 3) s.facts.emplace_back(n, d);
        }
    }
  }
  for (const bool zero : {false, true}) {
    std::string tsv;
    for (const auto& [node, fact] : PlainOrder(p, s, zero)) {
      absl::StrAppend(&tsv, node, "\t", fact, "\n");
    }
    EXPECT_EQ(FormatTsv(p, s, zero), tsv) << "zero " << zero;
    const internal::OutputPieces wide{.narrow_starts_up_to = 0};
    EXPECT_EQ(
        Collected([&](OutputSink sink) { return internal::WriteTsv(p, s, zero, wide, sink); }),
        tsv)
        << "zero " << zero << ", 8-byte starts";
  }
}

TEST(OutputTest, ASinksErrorStopsTheWriterAndIsItsAnswer) {
  GeneratorOptions options;
  options.seed = 12;
  options.procedures = 40;
  ASSERT_OK_AND_ASSIGN(Problem p, Generate(options));
  p.node_names.Set(1, std::string(3 * kOutputBlockBytes, 'n'));  // blocks go out mid-answer
  const Solution solved = SolveReference(p);
  const internal::OutputPieces pieces{.pairs_per_piece = 3, .threads = 3};
  for (const bool json : {false, true}) {
    int blocks = 0;
    const auto failing = [&](std::string_view) {
      ++blocks;
      return absl::DataLossError("disk full");
    };
    const absl::Status s = json ? internal::WriteJson(p, solved, false, "", pieces, failing)
                                : internal::WriteTsv(p, solved, false, pieces, failing);
    EXPECT_THAT(s, StatusIs(Code::kDataLoss, "disk full"));
    EXPECT_EQ(blocks, 1) << "nothing is written after the sink fails";
  }
}

TEST(SolutionDigestTest, EqualSolutionsShareADigestAndAnyChangedPairChangesIt) {
  const Solution empty;
  EXPECT_EQ(SolutionDigest(empty), 0xcbf29ce484222325ull) << "FNV-1a's offset basis";
  const Solution a{{{0, 0}, {1, 2}, {3, 4}}};
  EXPECT_EQ(SolutionDigest(a), SolutionDigest(Solution{a}));
  Solution fact_changed = a;
  fact_changed.facts[1].second = 3;
  Solution node_changed = a;
  node_changed.facts[2].first = 5;
  Solution shorter = a;
  shorter.facts.pop_back();
  Solution swapped{{{0, 0}, {2, 1}, {3, 4}}};
  for (const Solution* other : {&fact_changed, &node_changed, &shorter, &swapped}) {
    EXPECT_NE(SolutionDigest(*other), SolutionDigest(a));
  }
}

TEST(GeneratorTest, MakesAsManyFactsAsAProblemMayHave) {
  // Every fact a pair may name: the zero fact and kMaxFacts - 1 more.
  ASSERT_OK_AND_ASSIGN(Problem p, Generate({.procedures = 2, .facts = kMaxFacts - 1,
                                            .front_end_shape = true}));
  EXPECT_EQ(p.fact_count(), kMaxFacts);
  EXPECT_OK(Validate(p));
  EXPECT_THAT(Generate({.facts = kMaxFacts}), StatusIs(Code::kInvalidArgument));
}

// Front-end names change the names and nothing else: the same graph, flows and seeds, so the
// same solution; names that follow the scheme, each once, most past the 12 bytes an index slot
// holds; and the text that writes them reads back as the same problem.
TEST(GeneratorTest, FrontEndNamesChangeTheNamesOnly) {
  for (const bool shape : {false, true}) {
    GeneratorOptions options{.seed = 5, .procedures = 300, .facts = 12, .front_end_shape = shape};
    ASSERT_OK_AND_ASSIGN(const Problem plain, Generate(options));
    options.front_end_names = true;
    ASSERT_OK_AND_ASSIGN(const Problem named, Generate(options));
    EXPECT_OK(Validate(named));
    ASSERT_EQ(named.node_count(), plain.node_count());
    EXPECT_EQ(named.fact_names, plain.fact_names);
    EXPECT_EQ(named.flows, plain.flows);
    EXPECT_EQ(named.seeds, plain.seeds);
    EXPECT_EQ(std::vector<uint32_t>(named.node_procedure.begin(), named.node_procedure.end()),
              std::vector<uint32_t>(plain.node_procedure.begin(), plain.node_procedure.end()));
    ASSERT_EQ(named.edges.size(), plain.edges.size());
    for (size_t k = 0; k < plain.edges.size(); ++k) {
      EXPECT_EQ(std::tie(named.edges[k].from, named.edges[k].to, named.edges[k].flow),
                std::tie(plain.edges[k].from, plain.edges[k].to, plain.edges[k].flow));
    }
    ASSERT_EQ(named.call_sites.size(), plain.call_sites.size());
    for (size_t k = 0; k < plain.call_sites.size(); ++k) {
      const CallSite &a = named.call_sites[k], &b = plain.call_sites[k];
      EXPECT_EQ(std::tie(a.call, a.return_site, a.call_to_return_flow),
                std::tie(b.call, b.return_site, b.call_to_return_flow));
      const absl::Span<const Callee> ac = named.CalleesOf(k), bc = plain.CalleesOf(k);
      ASSERT_EQ(ac.size(), bc.size());
      for (size_t c = 0; c < ac.size(); ++c) {
        EXPECT_EQ(std::tie(ac[c].procedure, ac[c].call_flow, ac[c].return_flow),
                  std::tie(bc[c].procedure, bc[c].call_flow, bc[c].return_flow));
      }
    }
    std::set<std::string_view> names;
    size_t past_twelve = 0;
    for (uint32_t n = 0; n < named.node_count(); ++n) {
      const Procedure& proc = named.procedures[named.node_procedure[n]];
      const std::string_view name = named.node_names[n];
      EXPECT_TRUE(names.insert(name).second) << name << " twice";
      ASSERT_TRUE(name.starts_with(proc.name + ":")) << name << " in " << proc.name;
      const std::string_view rest = name.substr(proc.name.size() + 1);
      if (n == proc.start) {
        EXPECT_EQ(rest, "entry");
      } else if (n == proc.exit) {
        EXPECT_EQ(rest, "exit");
      } else {
        EXPECT_THAT(std::string(rest), ::testing::MatchesRegex("[1-9][0-9]*")) << name;
      }
      past_twelve += name.size() > 12 ? 1 : 0;
    }
    EXPECT_EQ(named.procedures[0].name, "main");
    EXPECT_GT(past_twelve, named.node_count() / 2);
    EXPECT_EQ(SolveReference(named), SolveReference(plain));
    // Read back, its nodes are numbered in the text's order: the answer by name is the same.
    ASSERT_OK_AND_ASSIGN(const Problem read, ParseText(WriteText(named), "named.ifds"));
    EXPECT_EQ(FormatTsv(read, SolveReference(read), true),
              FormatTsv(named, SolveReference(named), true));
  }
}

TEST(BinaryFormatTest, ANamelessFileMayHaveMoreFactsThanWords) {
  // Without names, facts take no bytes: 200 facts in a file of a few dozen words.
  std::string text = "facts";
  for (int d = 1; d < 200; ++d) absl::StrAppend(&text, " f", d);
  absl::StrAppend(&text, "\nprocedure m start n0 exit n0\nseed n0 0\n",
                  "call n0 returns n0 {gen f199}\ncallee n0 m call {} return {}\n");
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(text, "in.ifds"));
  const std::string bytes = WriteBinary(p, /*names=*/false);
  ASSERT_LT(bytes.size() / 4, 200u);
  ASSERT_OK_AND_ASSIGN(Problem nameless, ParseBinary(bytes, "b.bin"));
  EXPECT_EQ(nameless.fact_count(), 200u);
  EXPECT_EQ(SolveReference(nameless), SolveReference(p));
}

TEST(BinaryFormatTest, RejectsTruncationLiesAndGarbageWithSpecificMessages) {
  ASSERT_OK_AND_ASSIGN(Problem p, ParseText(kSmall, "in.ifds"));
  const std::string good = WriteBinary(p);
  EXPECT_THAT(ParseBinary("not a problem", "x.bin"), StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(ParseBinary(good.substr(0, good.size() - 1), "x.bin"),
              StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(ParseBinary(good + "x", "x.bin"), StatusIs(Code::kInvalidArgument));
  std::string lying = good;
  const uint64_t huge = uint64_t{1} << 61;  // the node count claims 2^61 nodes
  std::memcpy(lying.data() + 16 + 8, &huge, 8);
  absl::StatusOr<Problem> parsed = ParseBinary(lying, "x.bin");
  EXPECT_THAT(parsed, StatusIs(Code::kInvalidArgument));
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("x.bin: byte"));
}

// Where a binary file's sections begin, from the counts in its header (docs/ifds-format.md):
// the magic, version and flags, eleven counts, then the arrays and the names.
struct BinaryLayout {
  enum { kFacts, kNodes, kProcedures, kFlows, kEdges, kCallSites, kCallees, kSeeds, kKills,
         kGens, kPairs, kCounts };
  uint64_t n[kCounts];
  size_t node_procedure, flow_headers, lists, edges, names;

  explicit BinaryLayout(const std::string& bytes) {
    std::memcpy(n, bytes.data() + 16, sizeof(n));
    node_procedure = 16 + sizeof(n);
    flow_headers = node_procedure + 4 * n[kNodes] + 8 * n[kProcedures];
    lists = flow_headers + 16 * n[kFlows];
    edges = lists + 4 * (n[kKills] + n[kGens]) + 8 * n[kPairs];
    names = edges + 12 * n[kEdges] + 16 * n[kCallSites] + 12 * n[kCallees] + 8 * n[kSeeds];
  }
  // Where the record of node k's name (a length word, then its bytes) begins: past the
  // facts' names and the nodes' before it.
  size_t NodeRecord(const Problem& p, size_t k) const {
    size_t at = names;
    for (std::string_view f : p.fact_names) at += 4 + f.size();
    for (size_t j = 0; j < k; ++j) at += 4 + p.node_names[j].size();
    return at;
  }
};

void PutWord(std::string* bytes, size_t at, uint32_t word) {
  std::memcpy(bytes->data() + at, &word, 4);
}

std::string MessageOf(const absl::StatusOr<Problem>& parsed) {
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST(BinaryFormatTest, AFileOfManyPiecesOfFlowsReadsAsItWasWritten) {
  GeneratorOptions o;
  o.procedures = 2500;
  o.front_end_shape = true;
  o.facts = 24;
  ASSERT_OK_AND_ASSIGN(Problem p, Generate(o));
  // Read on every core, in pieces: several and a part.
  ASSERT_GT(p.flows.size(), 3 * internal::kBinaryFlowsPerPiece);
  ASSERT_NE(p.flows.size() % internal::kBinaryFlowsPerPiece, 0u);
  for (const bool names : {true, false}) {
    const std::string bytes = WriteBinary(p, names);
    ASSERT_OK_AND_ASSIGN(Problem read, ParseBinary(bytes, "b.bin"));
    EXPECT_EQ(WriteBinary(read, names), bytes);
    EXPECT_TRUE(read.flows == p.flows);
  }
}

TEST(BinaryFormatTest, AnErrorInTheNamesSaysTheByteWhereItsNameEnds) {
  // 50 nodes: the names are read 16 at a time, and each is checked as if read alone.
  std::string text = "facts a b\nprocedure main start s exit e\nnodes main";
  for (int k = 1; k <= 48; ++k) absl::StrAppend(&text, " n", k);
  absl::StrAppend(&text, "\nedge s e {a -> b}\nseed s 0\n");
  ASSERT_OK_AND_ASSIGN(const Problem p, ParseText(text, "in.ifds"));
  const BinaryLayout layout(WriteBinary(p));
  // Where node k's record ends.
  const auto end_of = [&](size_t k) { return layout.NodeRecord(p, k + 1); };
  for (const size_t k : {1, 15, 16, 17, 31, 32, 40, 49}) {
    SCOPED_TRACE(k);
    Problem twice = p;
    twice.node_names.Set(k, p.node_names[k - 1]);
    EXPECT_EQ(MessageOf(ParseBinary(WriteBinary(twice), "x.bin")),
              absl::StrFormat("x.bin: byte %d: the name '%s' is used twice", end_of(k),
                              p.node_names[k - 1]));
    Problem spaced = p;
    spaced.node_names.Set(k, std::string(p.node_names[k]) + " x");
    const BinaryLayout spaced_layout(WriteBinary(spaced));
    EXPECT_EQ(MessageOf(ParseBinary(WriteBinary(spaced), "x.bin")),
              absl::StrFormat("x.bin: byte %d: a name holds characters names may not",
                              spaced_layout.NodeRecord(spaced, k + 1)));
    // Cut in its length word, the record is unread; cut in its bytes, its length is read.
    const std::string whole = WriteBinary(p);
    const size_t record = layout.NodeRecord(p, k);
    EXPECT_EQ(MessageOf(ParseBinary(whole.substr(0, record + 2), "x.bin")),
              absl::StrFormat("x.bin: byte %d: truncated names", record));
    EXPECT_EQ(MessageOf(ParseBinary(whole.substr(0, record + 4 + p.node_names[k].size() - 1),
                                    "x.bin")),
              absl::StrFormat("x.bin: byte %d: truncated names", record + 4));
  }
  // The first error in the file's order is the one said, within a batch of names too.
  Problem both = p;
  both.node_names.Set(20, "bad name");
  both.node_names.Set(25, p.node_names[24]);
  EXPECT_THAT(MessageOf(ParseBinary(WriteBinary(both), "x.bin")),
              HasSubstr("a name holds characters names may not"));
  const std::string cut = WriteBinary(both);
  EXPECT_THAT(MessageOf(ParseBinary(cut.substr(0, BinaryLayout(cut).NodeRecord(both, 26) + 1),
                                    "x.bin")),
              HasSubstr("a name holds characters names may not"));
}

TEST(BinaryFormatTest, AFlowsErrorInALaterPieceIsTheErrorValidateGives) {
  GeneratorOptions o;
  o.procedures = 2500;
  o.front_end_shape = true;
  o.facts = 24;
  ASSERT_OK_AND_ASSIGN(const Problem p, Generate(o));
  ASSERT_GT(p.flows.size(), 3 * internal::kBinaryFlowsPerPiece);
  const std::string good = WriteBinary(p);
  const BinaryLayout layout(good);
  // A flag past 1, in the third piece: the byte after the flag.
  const size_t flagged = 2 * internal::kBinaryFlowsPerPiece + 5;
  std::string bytes = good;
  PutWord(&bytes, layout.flow_headers + 16 * flagged, 2);
  EXPECT_EQ(MessageOf(ParseBinary(bytes, "x.bin")),
            absl::StrFormat("x.bin: byte %d: flow identity flag must be 0 or 1",
                            layout.flow_headers + 16 * flagged + 4));
  // A flow of the third piece with its first two pairs swapped: not normalized.
  size_t f = 2 * internal::kBinaryFlowsPerPiece + 7;
  while (p.flows[f].pairs.size() < 2) ++f;
  ASSERT_LT(f, p.flows.size());
  const FlowTable::Begins at = p.flows.begins(f);
  const size_t pairs_at = layout.lists + 4 * (at.kills + at.gens) + 8 * at.pairs +
                          4 * (p.flows[f].kills.size() + p.flows[f].gens.size());
  std::string unsorted = good;
  std::swap_ranges(unsorted.begin() + static_cast<ptrdiff_t>(pairs_at),
                   unsorted.begin() + static_cast<ptrdiff_t>(pairs_at + 8),
                   unsorted.begin() + static_cast<ptrdiff_t>(pairs_at + 8));
  EXPECT_EQ(MessageOf(ParseBinary(unsorted, "x.bin")),
            "x.bin: a flow function is not normalized");
  // Validate's checks before the flows' come first, and those after them come after.
  std::string earlier = unsorted;
  const uint32_t start = p.procedures[0].start;
  PutWord(&earlier, layout.node_procedure + 4 * start, p.node_procedure[start] == 0 ? 1 : 0);
  EXPECT_THAT(MessageOf(ParseBinary(earlier, "x.bin")),
              HasSubstr("start and exit must be its own nodes"));
  std::string later = unsorted;
  const Edge& e = p.edges[0];
  uint32_t elsewhere = 0;
  while (p.node_procedure[elsewhere] == p.node_procedure[e.from]) ++elsewhere;
  PutWord(&later, layout.edges + 4, elsewhere);
  EXPECT_EQ(MessageOf(ParseBinary(later, "x.bin")), "x.bin: a flow function is not normalized");
  later = good;
  PutWord(&later, layout.edges + 4, elsewhere);
  EXPECT_THAT(MessageOf(ParseBinary(later, "x.bin")), HasSubstr("crosses procedures"));
}

// Mangles `input` a few bytes at a time: flips, inserts, deletes, truncations, duplications.
std::string Mangle(const std::string& input, std::mt19937_64& rng) {
  std::string s = input;
  const int edits = 1 + static_cast<int>(rng() % 6);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t at = rng() % s.size();
    switch (rng() % 6) {
      case 0: s[at] = static_cast<char>(rng()); break;
      case 1: s.insert(at, 1, static_cast<char>(rng())); break;
      case 2: s.erase(at, 1 + rng() % 8); break;
      case 3: s.resize(at); break;
      case 4: s.insert(at, s.substr(at, rng() % 64)); break;
      default: s[at] = "{}->,# \n0"[rng() % 9]; break;
    }
  }
  return s;
}

TEST(FormatsTest, ParsersSurviveASeededCorpusOfMangledInputs) {
  GeneratorOptions o;
  o.procedures = 4;
  ASSERT_OK_AND_ASSIGN(Problem p, Generate(o));
  o.front_end_shape = true;
  o.facts = 6;
  o.scope = 3;
  ASSERT_OK_AND_ASSIGN(Problem front_end, Generate(o));
  const std::vector<std::string> texts = {kSmall, WriteText(p), WriteText(front_end)};
  const std::vector<std::string> binaries = {WriteBinary(p), WriteBinary(p, false)};
  std::mt19937_64 rng(20261129);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string& base = texts[i % texts.size()];
    const std::string mangled = Mangle(base, rng);
    absl::StatusOr<Problem> text = ParseText(mangled, "fuzz.ifds");
    // The fast way reads exactly what a statement-by-statement reading does.
    absl::StatusOr<Problem> slowly = internal::ParseTextStatementByStatement(mangled, "fuzz.ifds");
    ASSERT_EQ(text.status(), slowly.status()) << mangled;
    // And it never reads again what it said it was done with.
    absl::StatusOr<Problem> given_back = internal::ParseTextOverwritingConsumed(mangled, "fuzz.ifds");
    ASSERT_EQ(given_back.status(), text.status()) << mangled;
    if (text.ok()) {
      ASSERT_EQ(WriteText(*given_back), WriteText(*text)) << mangled;
    }
    // Read in stretches of a few lines on three threads, committed in order (and the text
    // read twice, each piece released once read and reloaded for the second pass): the same.
    const size_t stretch = 1 + rng() % 256;
    for (const bool reread : {false, true}) {
      absl::StatusOr<Problem> stretched =
          internal::ParseTextOverwritingConsumed(mangled, "fuzz.ifds", stretch, 3, reread);
      ASSERT_EQ(stretched.status(), text.status())
          << "stretches of " << stretch << ", reread " << reread << "\n" << mangled;
      if (text.ok()) {
        ASSERT_EQ(WriteText(*stretched), WriteText(*text)) << mangled;
      }
    }
    if (text.ok()) {
      ASSERT_EQ(WriteText(*text), WriteText(*slowly)) << mangled;
      ++accepted;
      SolveReference(*text);  // whatever parses must also be solvable
    } else {
      ++rejected;
      EXPECT_EQ(text.status().code(), Code::kInvalidArgument);
      EXPECT_THAT(std::string(text.status().message()), HasSubstr("fuzz.ifds:"));
    }
    const std::string& bin = binaries[i % binaries.size()];
    absl::StatusOr<Problem> binary = ParseBinary(Mangle(bin, rng), "fuzz.bin");
    if (binary.ok()) {
      SolveReference(*binary);
    } else {
      EXPECT_EQ(binary.status().code(), Code::kInvalidArgument);
    }
  }
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(accepted, 10) << "some mangles (comments, whitespace) stay valid";
}

}  // namespace
}  // namespace sluice::ifds
