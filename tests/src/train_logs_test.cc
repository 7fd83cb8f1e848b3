// `ringfeed train`'s --metrics and --dump-order as logs that survive a crash (issue 28, item 4):
// written as the run goes, a record a write, so a run killed with SIGKILL keeps every line it had
// written; a resumed run appends after a line saying where it resumed, the earlier lines intact;
// a run started afresh does not replace an earlier run's file unless told to (--overwrite).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::MakeDataset;
using testing::RunCommand;
using testing::TempDir;
using testing::Train;

std::string Text(const std::string& path) {
  const std::vector<uint8_t> bytes = testing::ReadAll(path);
  return std::string(bytes.begin(), bytes.end());
}

// The whole lines of `text` (a last line without its '\n' is the record a kill cut: left out).
std::vector<std::string> WholeLines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
    lines.push_back(text.substr(at, end - at));
  }
  return lines;
}

std::vector<nlohmann::json> Records(const std::vector<std::string>& lines) {
  std::vector<nlohmann::json> out;
  for (const std::string& line : lines) {
    out.push_back(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false));
    EXPECT_FALSE(out.back().is_discarded()) << "not JSON: " << line;
  }
  return out;
}

std::vector<std::string> Events(const std::vector<nlohmann::json>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r.value("event", "?"));
  return out;
}

// An order file's lines: "# ..." lines kept as they are, the samples of each run of indices.
// Every line must be a comment or an index below 300 (MakeDataset's samples).
struct OrderLines {
  std::vector<std::string> comments;
  std::vector<std::vector<uint64_t>> epochs;  // the indices after each "# epoch" line
};
OrderLines ParseOrder(const std::vector<std::string>& lines) {
  OrderLines o;
  for (const std::string& line : lines) {
    if (line.rfind("# ", 0) == 0) {
      o.comments.push_back(line);
      if (line.rfind("# epoch ", 0) == 0) o.epochs.emplace_back();
      continue;
    }
    EXPECT_FALSE(line.empty() || line.find_first_not_of("0123456789") != std::string::npos)
        << "not an index: \"" << line << "\"";
    EXPECT_LT(std::stoull("0" + line), 300u);
    EXPECT_FALSE(o.epochs.empty()) << "an index before the first \"# epoch\" line";
    if (!o.epochs.empty()) o.epochs.back().push_back(std::stoull("0" + line));
  }
  return o;
}

bool IsPermutationOfTheDataset(std::vector<uint64_t> e) {
  std::sort(e.begin(), e.end());
  for (uint64_t i = 0; i < e.size(); ++i) {
    if (e[i] != i) return false;
  }
  return e.size() == 300;
}

// Each file's text after `before`, which it must begin with, less the one '\n' a resumed run
// adds after a line the kill cut.
std::string After(const std::string& text, const std::string& before) {
  EXPECT_EQ(text.substr(0, before.size()), before) << "the earlier lines changed";
  std::string rest = text.substr(std::min(before.size(), text.size()));
  if (!before.empty() && before.back() != '\n' && !rest.empty() && rest[0] == '\n') {
    rest.erase(0, 1);
  }
  return rest;
}

// The run is SIGKILLed (no handler, no flush at exit) once 5 metrics lines are on the file: every
// whole line of both files parses, each finished epoch's order is a permutation of the dataset,
// and a run resumed from its last periodic checkpoint appends after the marker line.
TEST(TrainLogs, AKilledRunKeepsEveryLineItWroteAndItsResumeAppends) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string m = t.File("m.jsonl"), o = t.File("order"), ck = t.File("ck");
  const std::string script = Train(data, "--epochs 100000 --checkpoint-every 7 --checkpoint " + ck +
                                             " --metrics " + m + " --dump-order " + o) +
                             " > " + t.File("log") + " 2>&1 & pid=$!\n" +
                             "for i in $(seq 1200); do [ \"$(cat " + m +
                             " 2>/dev/null | wc -l)\" -ge 5 ] && break; sleep 0.05; done\n" +
                             "kill -KILL $pid\nwait $pid\necho \"exit=$?\"\n";
  testing::WriteAll(t.File("run.sh"), script.data(), script.size());
  std::string out;
  ASSERT_EQ(RunCommand("timeout 120 sh " + t.File("run.sh"), &out), 0) << out;
  ASSERT_NE(out.find("exit=137"), std::string::npos) << out;  // 128 + SIGKILL

  const std::string killed_m = Text(m), killed_o = Text(o);
  const std::vector<nlohmann::json> records = Records(WholeLines(killed_m));
  ASSERT_GE(records.size(), 5u) << killed_m;
  EXPECT_EQ(records[0]["event"], "start");
  for (size_t i = 1; i < records.size(); ++i) {
    EXPECT_EQ(records[i]["event"], "epoch");
    EXPECT_EQ(records[i]["epoch"], i);
  }
  const OrderLines order = ParseOrder(WholeLines(killed_o));
  ASSERT_GE(order.epochs.size(), 4u);
  for (size_t e = 0; e + 1 < order.epochs.size(); ++e) {
    EXPECT_TRUE(IsPermutationOfTheDataset(order.epochs[e])) << "epoch " << e + 1;
    EXPECT_EQ(order.comments[e], "# epoch " + std::to_string(e + 1));
  }

  auto c = ReadCheckpoint(ck);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const uint64_t epoch = c->epoch + 1, step = c->step;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 100000 --max-steps " + std::to_string(step + 12) +
                                       " --resume " + ck + " --checkpoint " + ck + " --metrics " +
                                       m + " --dump-order " + o),
                       &out),
            0)
      << out;
  const std::vector<nlohmann::json> resumed = Records(WholeLines(After(Text(m), killed_m)));
  ASSERT_GE(resumed.size(), 3u);
  EXPECT_EQ(resumed[0], (nlohmann::json{{"event", "resume"},
                                        {"checkpoint", ck},
                                        {"epoch", epoch},
                                        {"step", step},
                                        {"overrides", nlohmann::json::array()}}));
  EXPECT_EQ(resumed[1]["event"], "start");
  EXPECT_EQ(resumed.back()["event"], "end");
  EXPECT_EQ(resumed.back()["step"], step + 12);
  const std::vector<std::string> rest = WholeLines(After(Text(o), killed_o));
  ASSERT_GE(rest.size(), 2u);
  EXPECT_EQ(rest[0], "# resumed from " + ck + " at epoch " + std::to_string(epoch) + " step " +
                         std::to_string(step));
  EXPECT_EQ(rest[1], "# epoch " + std::to_string(epoch));
  // 12 steps from mid-epoch: its rest, and whole epochs after it (each the dataset once).
  const OrderLines resumed_order = ParseOrder(rest);
  ASSERT_GE(resumed_order.epochs.size(), 2u);
  for (size_t e = 1; e + 1 < resumed_order.epochs.size(); ++e) {
    EXPECT_TRUE(IsPermutationOfTheDataset(resumed_order.epochs[e]))
        << resumed_order.comments[e + 1];
  }
}

// Stopped by --max-steps and resumed onto the same files: the first run's bytes stay as they
// were, the marker follows them, and the two legs of the order are the straight run's.
TEST(TrainLogs, AResumedRunAppendsAfterAMarkerLeavingTheEarlierLinesIntact) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string m = t.File("m.jsonl"), o = t.File("order"), c = t.File("c");
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 2 --dump-order " + t.File("straight")), &out), 0)
      << out;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 2 --max-steps 13 --checkpoint " + c + " --metrics " +
                                       m + " --dump-order " + o),
                       &out),
            0)
      << out;
  const std::string first_m = Text(m), first_o = Text(o);
  EXPECT_EQ(Events(Records(WholeLines(first_m))),
            (std::vector<std::string>{"start", "epoch", "end"}));
  ASSERT_EQ(
      RunCommand(Train(data, "--epochs 2 --resume " + c + " --metrics " + m + " --dump-order " + o),
                 &out),
      0)
      << out;
  const std::vector<nlohmann::json> all = Records(WholeLines(Text(m)));
  EXPECT_EQ(Events(all),
            (std::vector<std::string>{"start", "epoch", "end", "resume", "start", "epoch", "end"}));
  EXPECT_EQ(WholeLines(After(Text(m), first_m))[0],
            "{\"checkpoint\":\"" + c +
                "\",\"epoch\":2,\"event\":\"resume\",\"overrides\":[],"
                "\"step\":13}");
  // 13 steps: epoch 1 (10 steps) and 96 samples of epoch 2; the rest after the marker.
  const std::string rest = After(Text(o), first_o);
  EXPECT_EQ(rest.substr(0, rest.find('\n', rest.find('\n') + 1) + 1),
            "# resumed from " + c + " at epoch 2 step 13\n# epoch 2\n");
  const OrderLines legs = ParseOrder(WholeLines(Text(o)));
  const OrderLines straight = ParseOrder(WholeLines(Text(t.File("straight"))));
  ASSERT_EQ(legs.epochs.size(), 3u);
  ASSERT_EQ(straight.epochs.size(), 2u);
  EXPECT_EQ(legs.epochs[0], straight.epochs[0]);
  EXPECT_EQ(legs.epochs[1].size(), 96u);
  std::vector<uint64_t> second = legs.epochs[1];
  second.insert(second.end(), legs.epochs[2].begin(), legs.epochs[2].end());
  EXPECT_EQ(second, straight.epochs[1]);
}

// A run started afresh would truncate an earlier run's log as it opened it: refused at its
// start, naming the file; --overwrite replaces it, and an empty file (mktemp's) is taken.
TEST(TrainLogs, AFreshRunDoesNotReplaceAnEarlierRunsLogUnasked) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  for (const std::string flag : {"--metrics", "--dump-order"}) {
    SCOPED_TRACE(flag);
    const std::string log = t.File("log");
    ASSERT_EQ(RunCommand(Train(data, "--max-steps 2 --overwrite " + flag + " " + log), &out), 0)
        << out;
    const std::string earlier = Text(log);
    EXPECT_EQ(RunCommand(Train(data, "--max-steps 3 " + flag + " " + log), &out), 2);
    EXPECT_EQ(out, "ringfeed: " + flag + " " + log + " exists (" + std::to_string(earlier.size()) +
                       " bytes) and this run starts afresh; refusing to replace it: a run given "
                       "--resume appends to it, --overwrite replaces it, or name another file\n");
    EXPECT_EQ(Text(log), earlier);
    ASSERT_EQ(RunCommand(Train(data, "--max-steps 3 --overwrite " + flag + " " + log), &out), 0)
        << out;
    EXPECT_NE(Text(log), earlier);
    testing::WriteAll(log, "", 0);
    ASSERT_EQ(RunCommand(Train(data, "--max-steps 3 " + flag + " " + log), &out), 0) << out;
    EXPECT_FALSE(Text(log).empty());
  }
}

}  // namespace
}  // namespace rf
