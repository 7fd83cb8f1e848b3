// ringfeed-convert npy-docs, jsonl and text: token corpora as tokens records, one a document, in
// input order; the dtype rule (a first pass where the input does not say); empty documents
// skipped and counted; every malformed input refused naming the file and the byte (JSON lines:
// line and column too), nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "tests/testing/temp_dir.h"
#include "tests/tools/convert_testing.h"

namespace rf {
namespace {

using testing::Convert;
using testing::FailsWith;
using testing::FilesIn;
using testing::TempDir;
using testing::TokenRecords;
using testing::WriteAll;

using Docs = std::vector<std::vector<int64_t>>;

DType StoredDType(const std::string& path) { return Dataset::Open(path)->header().sample_dtype; }

void WriteText(const std::string& path, const std::string& text) {
  WriteAll(path, text.data(), text.size());
}

template <typename T>
std::vector<uint8_t> Npy(const std::string& descr, const std::vector<T>& v) {
  return testing::NpyBytes(descr, {v.size()}, v.data(), v.size() * sizeof(T));
}

// Documents whose ids encode their position: document i holds i * 100 + j + base.
Docs PositionalDocs(size_t n, int64_t base = 0) {
  Docs d(n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < 1 + i % 9; ++j) d[i].push_back(static_cast<int64_t>(i * 100 + j) + base);
  return d;
}

std::vector<int32_t> AsInt32(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

// ---- .npy documents

TEST(NpyDocs, ADirectoryIsReadInNameOrderEmptyArraysSkippedAndCounted) {
  TempDir t;
  std::filesystem::create_directory(t.File("docs"));
  const Docs docs = PositionalDocs(30);
  for (size_t i = 0; i < docs.size(); ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "doc-%03zu.npy", i);  // written out of order below
    WriteAll(t.File("docs/") + name, Npy("<i4", AsInt32(docs[i])));
  }
  WriteAll(t.File("docs/doc-015a.npy"), Npy("<i4", std::vector<int32_t>{}));
  WriteText(t.File("docs/README"), "not a document");
  std::string out;
  ASSERT_TRUE(
      Convert({"npy-docs", t.File("docs"), "-o", t.File("d.rfd"), "--compress", "lz4"}, &out).ok());
  EXPECT_EQ(TokenRecords(t.File("d.rfd")), docs);
  EXPECT_EQ(StoredDType(t.File("d.rfd")), DType::kUInt16);  // int32 ids that fit, a first pass
  EXPECT_NE(out.find("30 documents, 141 ids as uint16"), std::string::npos) << out;
  EXPECT_NE(out.find("a first pass finding the dtype included"), std::string::npos) << out;
  EXPECT_NE(out.find("skipped 1 empty document (a record holds one id at least)"),
            std::string::npos)
      << out;
}

TEST(NpyDocs, IdsWithOffsetsMakeOneRecordADocument) {
  TempDir t;
  const Docs docs = PositionalDocs(40, 70000);  // past uint16: int32
  std::vector<int64_t> ids, offsets = {0};
  for (const auto& d : docs) {
    ids.insert(ids.end(), d.begin(), d.end());
    offsets.push_back(static_cast<int64_t>(ids.size()));
    if (offsets.size() == 5) offsets.push_back(offsets.back());  // an empty document
  }
  WriteAll(t.File("ids.npy"), Npy("<i8", ids));
  WriteAll(t.File("off.npy"), Npy("<i8", offsets));
  ASSERT_TRUE(Convert({"npy-docs", t.File("ids.npy"), "--offsets", t.File("off.npy"), "-o",
                       t.File("d.rfd"), "-q", "--memory-budget", "64"})
                  .ok());
  EXPECT_EQ(TokenRecords(t.File("d.rfd")), docs);
  EXPECT_EQ(StoredDType(t.File("d.rfd")), DType::kInt32);
}

TEST(NpyDocs, WhatIsNotOneDocumentAFileIsRefused) {
  TempDir t;
  std::filesystem::create_directory(t.File("docs"));
  WriteAll(t.File("docs/a.npy"), Npy("<u2", std::vector<uint16_t>{1, 2}));
  const std::vector<uint16_t> square = {1, 2, 3, 4};
  WriteAll(t.File("docs/b.npy"), testing::NpyBytes("<u2", {2, 2}, square.data(), 8));
  EXPECT_TRUE(FailsWith(Convert({"npy-docs", t.File("docs"), "-o", t.File("d.rfd"), "-q"}),
                        t.File("docs/b.npy") + ": at byte 60: a document is a 1-D array; this "
                                               "one has shape (2, 2)"));
  WriteAll(t.File("docs/b.npy"), Npy("<i4", std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(FailsWith(Convert({"npy-docs", t.File("docs"), "-o", t.File("d.rfd"), "-q"}),
                        t.File("docs/b.npy") + ": at byte 60: holds int32 ids, but " +
                            t.File("docs/a.npy") +
                            " holds uint16 (the documents share one dtype)"));
  WriteAll(t.File("docs/b.npy"), Npy("<f4", std::vector<float>{1, 2}));
  EXPECT_TRUE(FailsWith(Convert({"npy-docs", t.File("docs"), "-o", t.File("d.rfd"), "-q"}),
                        "a document holds integers, not '<f4'"));
  WriteAll(t.File("docs/b.npy"), Npy("<i2", std::vector<int16_t>{1, -2}));
  std::filesystem::remove(t.File("docs/a.npy"));
  EXPECT_TRUE(FailsWith(Convert({"npy-docs", t.File("docs"), "-o", t.File("d.rfd"), "-q"}),
                        t.File("docs/b.npy") + ": at byte 130: id -2 (id 1 of document 0) is "
                                               "negative"));
  EXPECT_TRUE(FailsWith(Convert({"npy-docs", t.File("none"), "-o", t.File("d.rfd"), "-q"}),
                        "not a directory"));
  EXPECT_EQ(FilesIn(t.path()), std::vector<std::string>{"docs"});
}

TEST(NpyDocs, OffsetsThatDoNotCoverTheIdsAreRefusedNamingTheByte) {
  TempDir t;
  WriteAll(t.File("ids.npy"), Npy("<u2", std::vector<uint16_t>(10, 7)));
  const auto refuse = [&](const std::vector<int64_t>& offsets, const std::string& fragment) {
    WriteAll(t.File("off.npy"), Npy("<i8", offsets));
    return FailsWith(Convert({"npy-docs", t.File("ids.npy"), "--offsets", t.File("off.npy"), "-o",
                              t.File("d.rfd"), "-q"}),
                     t.File("off.npy") + ": " + fragment);
  };
  EXPECT_TRUE(refuse({1, 10}, "at byte 128: offset 0 is 1, not 0"));
  EXPECT_TRUE(refuse({0, 6, 4, 10}, "at byte 144: offset 2 is 4, below the one before it (6)"));
  EXPECT_TRUE(refuse(
      {0, 4, 9}, "at byte 144: offset 2 is 9; the last is " + t.File("ids.npy") + "'s length, 10"));
  EXPECT_TRUE(refuse({0}, "at byte 60: the offsets hold N + 1 entries for N documents"));
  // Issue 40: uint64 offsets of 2^63 and 2^64 - 1 were printed as 9223372036854775807.
  for (const uint64_t big : {uint64_t{1} << 63, ~uint64_t{0}}) {
    WriteAll(t.File("off.npy"), Npy("<u8", std::vector<uint64_t>{0, big, 10}));
    EXPECT_TRUE(FailsWith(Convert({"npy-docs", t.File("ids.npy"), "--offsets", t.File("off.npy"),
                                   "-o", t.File("d.rfd"), "-q"}),
                          t.File("off.npy") + ": at byte 136: offset 1 is " + std::to_string(big) +
                              "; the last is " + t.File("ids.npy") + "'s length, 10"));
  }
  EXPECT_EQ(FilesIn(t.path()), (std::vector<std::string>{"ids.npy", "off.npy"}));
}

// Issue 40: a link to nothing in the directory said "DIR: cannot list the directory: No such file
// or directory". One named .npy is refused naming it; one named otherwise is passed over.
TEST(NpyDocs, ALinkToNothingIsNamed) {
  TempDir t;
  std::filesystem::create_directory(t.File("docs"));
  WriteAll(t.File("docs/a.npy"), Npy("<u2", std::vector<uint16_t>{1, 2}));
  std::filesystem::create_symlink("gone", t.File("docs/notes.txt"));
  ASSERT_TRUE(Convert({"npy-docs", t.File("docs"), "-o", t.File("d.rfd"), "-q"}).ok());
  std::filesystem::create_symlink("gone.npy", t.File("docs/b.npy"));
  EXPECT_EQ(Convert({"npy-docs", t.File("docs"), "-o", t.File("e.rfd"), "-q"}).ToString(),
            t.File("docs/b.npy") +
                ": a symbolic link to nothing, where the directory's .npy files are its documents");
  EXPECT_EQ(FilesIn(t.path()), (std::vector<std::string>{"d.rfd", "docs"}));
}

// ---- JSON lines

TEST(JsonLines, ListsAndObjectsOfTokensOrInputIdsAreRead) {
  TempDir t;
  WriteText(t.File("a.jsonl"),
            "[1, 2, 3]\n"
            "{\"text\": \"a ] [ \\\" tokens\", \"tokens\": [4, 5], \"n\": [9]}\n"
            "[]\n"
            "{\"input_ids\": [6], \"attention_mask\": [1]}\r\n");
  WriteText(t.File("b.jsonl"), "[7,8]");  // no final newline
  std::string out;
  ASSERT_TRUE(
      Convert({"jsonl", t.File("a.jsonl"), t.File("b.jsonl"), "-o", t.File("d.rfd")}, &out).ok());
  EXPECT_EQ(TokenRecords(t.File("d.rfd")), (Docs{{1, 2, 3}, {4, 5}, {6}, {7, 8}}));
  EXPECT_NE(out.find("skipped 1 empty document"), std::string::npos) << out;
}

TEST(JsonLines, IdsPastUint16AreStoredAsInt32AndVocabSizeSkipsTheFirstPass) {
  TempDir t;
  WriteText(t.File("a.jsonl"), "[1, 70000]\n[2]\n");
  std::string out;
  ASSERT_TRUE(Convert({"jsonl", t.File("a.jsonl"), "-o", t.File("d.rfd")}, &out).ok());
  EXPECT_EQ(StoredDType(t.File("d.rfd")), DType::kInt32);
  ASSERT_TRUE(
      Convert({"jsonl", t.File("a.jsonl"), "-o", t.File("e.rfd"), "--vocab-size", "128256"}, &out)
          .ok());
  EXPECT_EQ(StoredDType(t.File("e.rfd")), DType::kInt32);
  EXPECT_EQ(out.find("first pass"), std::string::npos) << out;
  ASSERT_TRUE(
      Convert({"jsonl", t.File("a.jsonl"), "-o", t.File("f.rfd"), "--dtype", "int64", "-q"}).ok());
  EXPECT_EQ(TokenRecords(t.File("f.rfd")), (Docs{{1, 70000}, {2}}));
}

TEST(JsonLines, MalformedLinesAreRefusedNamingLineAndColumn) {
  TempDir t;
  const auto refuse = [&](const std::string& text, const std::string& fragment,
                          std::vector<std::string> extra = {}) {
    WriteText(t.File("x.jsonl"), text);
    std::vector<std::string> args = {"jsonl", t.File("x.jsonl"), "-o", t.File("d.rfd"), "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    return FailsWith(Convert(args), t.File("x.jsonl") + ": " + fragment);
  };
  EXPECT_TRUE(refuse("[1]\n[1, 2.5]\n", "at byte 8: line 2, column 5: the number 2.5 in the list"));
  EXPECT_TRUE(refuse("[1]\n[1, 2\n",
                     "at byte 9: line 2, column 6: malformed JSON: syntax error "
                     "while parsing array"));
  EXPECT_TRUE(refuse("[1]\n\n[2]\n", "at byte 4: line 2, column 1: a blank line"));
  EXPECT_TRUE(refuse("{\"tokens\": [1], \"input_ids\": [1]}\n",
                     "at byte 16: line 1, column 17: an object with both"));
  EXPECT_TRUE(
      refuse("{\"text\": \"x\"}\n", "at byte 0: line 1, column 1: an object without a \"tokens\""));
  EXPECT_TRUE(refuse("{\"tokens\": 5}\n",
                     "at byte 0: line 1, column 1: the \"tokens\" member is a number, not a list"));
  EXPECT_TRUE(
      refuse("5\n", "at byte 0: line 1, column 1: a number where a list of ids or an object"));
  EXPECT_TRUE(refuse("[1, \"2\"]\n", "at byte 4: line 1, column 5: a string in the list of ids"));
  EXPECT_TRUE(refuse("[1, [2]]\n", "at byte 4: line 1, column 5: a list in the list of ids"));
  EXPECT_TRUE(refuse("[1]\n{\"a\": \"tokens\", \"tokens\": [3, -4]}\n",
                     "at byte 34: line 2, column 31: id -4 (id 1 of document 1) is negative"));
  EXPECT_TRUE(refuse("[1, 50257]\n",
                     "at byte 4: line 1, column 5: id 50257 (id 1 of document 0) "
                     "is not below --vocab-size 50257",
                     {"--vocab-size", "50257"}));
  EXPECT_TRUE(refuse("[18446744073709551615]\n",
                     "at byte 1: line 1, column 2: id 18446744073709551615 does "
                     "not fit int64"));
  EXPECT_TRUE(
      refuse("[1, 2, 3, 4, 5]\n",
             "at byte 0: line 1, column 1: document 0 holds more than the 4 ids a record holds",
             {"--max-record-size", "8", "--dtype", "uint16"}));
  EXPECT_EQ(FilesIn(t.path()), std::vector<std::string>{"x.jsonl"});
}

// ---- text through the byte tokenizer

TEST(ByteText, EachFileIsADocumentEndedBy256) {
  TempDir t;
  WriteText(t.File("a.txt"), "hi\n");
  WriteText(t.File("b.txt"), "");
  WriteText(t.File("c.txt"), "\xff");
  std::string out;
  ASSERT_TRUE(Convert({"text", t.File("a.txt"), t.File("b.txt"), t.File("c.txt"), "--tokenizer",
                       "bytes", "-o", t.File("d.rfd")},
                      &out)
                  .ok());
  EXPECT_EQ(TokenRecords(t.File("d.rfd")), (Docs{{'h', 'i', '\n', 256}, {255, 256}}));
  EXPECT_EQ(StoredDType(t.File("d.rfd")), DType::kUInt16);
  EXPECT_NE(out.find("skipped 1 empty document"), std::string::npos) << out;
}

TEST(ByteText, EachLineIsADocumentWithoutItsNewline) {
  TempDir t;
  WriteText(t.File("a.txt"), "ab\n\ncd\r\ne");
  WriteText(t.File("b.txt"), "f\n");
  std::string out;
  ASSERT_TRUE(Convert({"text", t.File("a.txt"), t.File("b.txt"), "--tokenizer", "bytes", "--split",
                       "lines", "-o", t.File("d.rfd"), "--memory-budget", "4"},
                      &out)
                  .ok());
  EXPECT_EQ(TokenRecords(t.File("d.rfd")),
            (Docs{{'a', 'b', 256}, {'c', 'd', '\r', 256}, {'e', 256}, {'f', 256}}));
  EXPECT_NE(out.find("skipped 1 empty document"), std::string::npos) << out;
}

TEST(ByteText, WhatTheTokenizerCannotDoIsRefused) {
  TempDir t;
  WriteText(t.File("a.txt"), "abc\ndefgh\n");
  EXPECT_TRUE(testing::FailsWithUsage(
      Convert({"text", t.File("a.txt"), "--tokenizer", "gpt2", "-o", t.File("d.rfd")}),
      "text: --tokenizer must be bytes, got \"gpt2\""));
  EXPECT_TRUE(FailsWith(
      Convert({"text", t.File("a.txt"), "--tokenizer", "bytes", "--split", "lines",
               "--max-record-size", "8", "-o", t.File("d.rfd")}),
      t.File("a.txt") + ": at byte 4: document 1 holds more than the 4 ids a record holds"));
  EXPECT_TRUE(FailsWith(Convert({"text", t.File("a.txt"), "--tokenizer", "bytes", "--vocab-size",
                                 "256", "-o", t.File("d.rfd")}),
                        t.File("a.txt") + ": at byte 10: id 256 (id 10 of document 0) is not "
                                          "below --vocab-size 256"));
  EXPECT_TRUE(FailsWith(Convert({"text", t.File("a.txt"), "--tokenizer", "bytes",
                                 "--format-version", "1", "-o", t.File("d.rfd")}),
                        "--format-version 1 holds fixed-shape samples only: tokens records need "
                        "version 2 or 3"));
  EXPECT_EQ(FilesIn(t.path()), std::vector<std::string>{"a.txt"});
}

}  // namespace
}  // namespace rf
