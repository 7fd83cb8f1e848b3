// ringfeed-convert jsonl against hostile lines (issue 40): a long line was held whole, about 3
// times its length (300 MB of whitespace around [1] with --memory-budget 1MiB took 824 MB; a
// 100 MB "text" member with --max-record-size 1MiB took 301 MB); a NUL byte ended the line
// silently ("[1,2]\0[3,4]" was the document [1,2]); a key given twice said the object had both
// "tokens" and "input_ids". Lines are parsed as they are read: memory follows the options, and
// every refusal names file, line, column and byte.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::TempDir;

// n copies of c between `before` and `after` (built so: GCC 12's -Wrestrict misreads "[" +
// std::string(n, c)).
std::string Around(const std::string& before, size_t n, char c, const std::string& after) {
  std::string s = before;
  s.append(n, c);
  return s + after;
}

void WriteText(const std::string& path, const std::string& text) {
  testing::WriteAll(path, text.data(), text.size());
}

// The peak memory a conversion of these 96 MB lines may take: a line held whole took 3 times its
// length (288 MB and more), one parsed in a stream takes 7 to 14 MB (49 to 65 MB under ASan,
// whose shadow memory and quarantine count too).
constexpr uint64_t kRssBoundKib = 100u * 1024;

// `jsonl FILE -q -o OUT extra...` in-process: the one-line message, or "OK".
std::string Refusal(const TempDir& t, const std::string& text,
                    const std::vector<std::string>& extra = {}) {
  WriteText(t.File("x.jsonl"), text);
  std::vector<std::string> args = {"jsonl", t.File("x.jsonl"), "-q", "-o", t.File("x.rfd")};
  args.insert(args.end(), extra.begin(), extra.end());
  return testing::Convert(args).ToString();
}

TEST(JsonlHostile, ALongLineOfWhitespaceIsParsedInBoundedMemory) {
  TempDir t;
  const std::string mib(1 << 20, ' ');  // 32 MiB of spaces three times: a 96 MiB line
  testing::WritePieces(
      t.File("w.jsonl"),
      {{"[7]\n"}, {mib, 32}, {"[1,"}, {mib, 32}, {"2]"}, {mib, 32}, {"\n\t[3]\t\n"}});
  const testing::MeasuredRun r =
      testing::RunMeasured({testing::ProgramPath("ringfeed-convert"), "jsonl", t.File("w.jsonl"),
                            "--memory-budget", "1MiB", "-q", "-o", t.File("w.rfd")});
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_LT(r.max_rss_kib, kRssBoundKib);  // was 3 times the 96 MB line
  EXPECT_EQ(testing::TokenRecords(t.File("w.rfd")),
            (std::vector<std::vector<int64_t>>{{7}, {1, 2}, {3}}));
}

TEST(JsonlHostile, AStringLongerThanTheBoundIsRefusedInBoundedMemory) {
  TempDir t;
  testing::WritePieces(
      t.File("s.jsonl"),
      {{"[1]\n{\"input_ids\":[1,2],\"text\":\""}, {std::string(1 << 20, 'x'), 96}, {"\"}\n"}});
  const testing::MeasuredRun r =
      testing::RunMeasured({testing::ProgramPath("ringfeed-convert"), "jsonl", t.File("s.jsonl"),
                            "--max-record-size", "1MiB", "-q", "-o", t.File("s.rfd")});
  EXPECT_EQ(r.rc, 1);
  // The string's quote is at byte 4 + 26 (column 27): the piece is full 1 MiB on.
  const uint64_t at = 4 + 26 + (1 << 20);
  EXPECT_EQ(r.output, "ringfeed-convert: " + t.File("s.jsonl") + ": at byte " + std::to_string(at) +
                          ": line 2, column " + std::to_string(at - 4 + 1) +
                          ": a string longer than 1048576 bytes (a line's strings are held whole "
                          "while it is parsed: at most --max-record-size or --memory-budget, "
                          "whichever is smaller, and 64 KiB)\n");
  EXPECT_LT(r.max_rss_kib, kRssBoundKib);  // was 3 times the 96 MB line
  EXPECT_EQ(testing::FilesIn(t.path()), std::vector<std::string>{"s.jsonl"});
  // A number, and a run of literals between two strings, are pieces too (64 KiB at least).
  EXPECT_EQ(Refusal(t, Around("[", 70000, '1', "]\n"), {"--max-record-size", "8"}),
            t.File("x.jsonl") +
                ": at byte 65537: line 1, column 65538: a number or a run between strings longer "
                "than 65536 bytes (a line's strings are held whole while it is parsed: at most "
                "--max-record-size or --memory-budget, whichever is smaller, and 64 KiB)");
  std::string trues = "{\"x\":[true";
  while (trues.size() < 70000) trues += ",true";
  EXPECT_NE(Refusal(t, trues + "],\"tokens\":[1]}\n", {"--memory-budget", "1KiB"})
                .find(": at byte 65537: line 1, column 65538: a number or a run between strings "
                      "longer than 65536 bytes"),
            std::string::npos);
  // Within the bound, members of any kind pass.
  EXPECT_EQ(Refusal(t, Around("{\"text\":\"", 60000, 'y', "\",\"tokens\":[5]}\n")), "OK");
}

// A line that runs past the 1 MiB read buffer is moved to its front and read whole; one longer
// than the bound on a piece is streamed, and its errors name their bytes as well.
TEST(JsonlHostile, LinesAcrossTheBufferAndStreamedLinesAreReadAndNamed) {
  TempDir t;
  const std::string first = Around("[1", (1 << 20) - 10, ' ', "]\n");
  WriteText(t.File("b.jsonl"), first + "[2, 3]\n" + Around("[4", 70000, ' ', ",5]"));
  ASSERT_TRUE(testing::Convert({"jsonl", t.File("b.jsonl"), "-q", "-o", t.File("b.rfd"),
                                "--max-record-size", "8"})
                  .ok());
  EXPECT_EQ(testing::TokenRecords(t.File("b.rfd")),
            (std::vector<std::vector<int64_t>>{{1}, {2, 3}, {4, 5}}));
  EXPECT_EQ(
      Refusal(t, Around("{\"tokens\": [", 70000, ' ', "3, -4]}\n"), {"--max-record-size", "8"}),
      t.File("x.jsonl") +
          ": at byte 70015: line 1, column 70016: id -4 (id 1 of document 0) is negative");
  EXPECT_EQ(Refusal(t, Around("{\"tokens\": [1],", 70000, ' ', "\"tokens\": [2]}\n"),
                    {"--max-record-size", "8"}),
            t.File("x.jsonl") +
                ": at byte 70015: line 1, column 70016: the key \"tokens\" appears twice");
}

TEST(JsonlHostile, ANulByteIsRefusedNamingItsByte) {
  TempDir t;
  EXPECT_EQ(Refusal(t, std::string("[1,2]\0[3,4]\n", 12)),
            t.File("x.jsonl") +
                ": at byte 5: line 1, column 6: a NUL byte (JSON lines are text; NUL is no part "
                "of a JSON value)");
  EXPECT_EQ(Refusal(t, std::string("[0]\n{\"input_ids\":[1,2]}\0 garbage {{{\n", 36)),
            t.File("x.jsonl") +
                ": at byte 23: line 2, column 20: a NUL byte (JSON lines are text; NUL is no part "
                "of a JSON value)");
  EXPECT_EQ(Refusal(t, std::string("[\"a\0\"]\n", 7)),
            t.File("x.jsonl") +
                ": at byte 3: line 1, column 4: a NUL byte (JSON lines are text; NUL is no part "
                "of a JSON value)");
}

TEST(JsonlHostile, TextAfterTheValueIsRefused) {
  TempDir t;
  EXPECT_EQ(Refusal(t, "[1,2] [3]\n"),
            t.File("x.jsonl") +
                ": at byte 6: line 1, column 7: malformed JSON: syntax error while parsing value - "
                "unexpected '['; expected end of input");
  EXPECT_EQ(Refusal(t, "{\"input_ids\":[1]}   x\n"),
            t.File("x.jsonl") +
                ": at byte 20: line 1, column 21: malformed JSON: syntax error while parsing value "
                "- invalid literal; last read: '1]}   x'; expected end of input");
  EXPECT_EQ(Refusal(t, "[1,2]   \t\r\n"), "OK");  // whitespace after it is nothing
}

TEST(JsonlHostile, AKeyGivenTwiceIsRefusedNamingIt) {
  TempDir t;
  EXPECT_EQ(
      Refusal(t, "[0]\n{\"tokens\":[1],  \"tokens\":[2]}\n"),
      t.File("x.jsonl") + ": at byte 20: line 2, column 17: the key \"tokens\" appears twice");
  EXPECT_EQ(
      Refusal(t, "{\"input_ids\":[1],\"input_ids\":[2]}\n"),
      t.File("x.jsonl") + ": at byte 17: line 1, column 18: the key \"input_ids\" appears twice");
  // Inside another member, or another key twice, is not the list's.
  EXPECT_EQ(Refusal(t, "{\"m\":{\"tokens\":1,\"tokens\":2},\"a\":0,\"a\":1,\"tokens\":[3]}\n"),
            "OK");
}

TEST(JsonlHostile, DeepNestingAndLongMalformedTokensEndInOneShortLine) {
  TempDir t;
  EXPECT_EQ(Refusal(t, Around("{\"x\":", 1000, '[', "\n")),
            t.File("x.jsonl") +
                ": at byte 516: line 1, column 517: nested more than 512 levels "
                "deep");
  // nlohmann-json quotes the token it read: 40 bytes of it at most, what follows kept.
  EXPECT_EQ(Refusal(t, Around("[1, ", 5000, '1', "]\n")),
            t.File("x.jsonl") +
                ": at byte 5003: line 1, column 5004: malformed JSON: number overflow parsing "
                "'1111111111111111111111111111111111111111...'");
  EXPECT_EQ(Refusal(t, Around("{\"", 5000, 'a', "\\q\": 1}\n")),
            t.File("x.jsonl") +
                ": at byte 5003: line 1, column 5004: malformed JSON: syntax error while parsing "
                "object key - invalid string: forbidden character after backslash; last read: "
                "'\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'; expected string literal");
  EXPECT_EQ(Refusal(t, Around("[1, \"", 5000, 'a', "\\q\"]\n")),
            t.File("x.jsonl") +
                ": at byte 5006: line 1, column 5007: malformed JSON: syntax error while parsing "
                "value - invalid string: forbidden character after backslash; last read: "
                "'\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'");
  // A parse error names the byte in the file: in a line read whole, and in one streamed (longer
  // than the 64 KiB bound), whose whitespace runs are handed to the parser as one byte.
  EXPECT_EQ(Refusal(t, "[1,        x]\n"),
            t.File("x.jsonl") +
                ": at byte 11: line 1, column 12: malformed JSON: syntax error while parsing value "
                "- invalid literal; last read: '1,        x'");
  EXPECT_EQ(Refusal(t, Around("[0]\n[1,", 100000, ' ', "x]\n"), {"--max-record-size", "8"}),
            t.File("x.jsonl") +
                ": at byte 100007: line 2, column 100004: malformed JSON: syntax error while "
                "parsing value - invalid literal; last read: '1, x'");
}

}  // namespace
}  // namespace rf
