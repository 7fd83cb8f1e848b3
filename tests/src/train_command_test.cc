// `ringfeed train` as a user runs it: resuming from a checkpoint continues bit-exactly, SIGINT
// leaves a valid checkpoint, real Fashion-MNIST gets learned. (Its errors and exit codes:
// train_command_errors_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "io/dataset.h"
#include "io/dataset_writer.h"
#include "model/checkpoint.h"
#include "tests/kernels/fashion_mnist.h"
#include "tests/src/train_command_testing.h"
#include "tests/testing/bit_identical.h"
#include "tests/testing/temp_dir.h"

namespace rf {
namespace {

using testing::MakeDataset;
using testing::ProgramPath;
using testing::RunCommand;
using testing::TempDir;
using testing::Train;

std::vector<nlohmann::json> ReadMetrics(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(TrainCommand, ResumedRunEndsBitIdenticalToAStraightRun) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  // 10 steps per epoch (the last of 12 samples): 25 steps cross two epoch boundaries, and the
  // break at step 13 falls mid-epoch.
  ASSERT_EQ(RunCommand(Train(data, "--epochs 5 --max-steps 25 --checkpoint " + t.File("a")), &out),
            0)
      << out;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 5 --max-steps 13 --checkpoint " + t.File("b")), &out),
            0)
      << out;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 5 --max-steps 25 --resume " + t.File("b") +
                                       " --checkpoint " + t.File("c")),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("resumed from " + t.File("b")), std::string::npos) << out;
  auto b = ReadCheckpoint(t.File("b"));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->step, 13u);
  EXPECT_EQ(b->epoch, 1u);
  EXPECT_EQ(b->next_sample, 96u);
  auto a = ReadCheckpoint(t.File("a"));
  auto c = ReadCheckpoint(t.File("c"));
  ASSERT_TRUE(a.ok() && c.ok());
  EXPECT_EQ(a->step, 25u);
  EXPECT_EQ(c->step, 25u);
  EXPECT_EQ(c->epoch, a->epoch);
  EXPECT_EQ(c->next_sample, a->next_sample);
  EXPECT_TRUE(testing::BitIdentical(a->params, c->params));
  EXPECT_TRUE(testing::BitIdentical(a->momentum, c->momentum));
  EXPECT_FALSE(testing::BitIdentical(a->params, b->params));  // the resumed run did train
}

// The same with AdamW, a cosine schedule after a fractional warmup and label smoothing: the
// resumed run is given none of those flags and must take them, the schedule's span, both AdamW
// moments and its step count from the checkpoint to end bit-identical.
TEST(TrainCommand, ResumedAdamWCosineSmoothedRunEndsBitIdenticalToAStraightRun) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string opts =
      "--epochs 3 --optimizer adamw --lr 0.003 --weight-decay 0.01 --lr-schedule cosine "
      "--warmup-epochs 0.5 --label-smoothing 0.1 ";
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, opts + "--checkpoint " + t.File("a") + " --metrics " +
                                       t.File("m.jsonl")),
                       &out),
            0)
      << out;
  ASSERT_EQ(RunCommand(Train(data, opts + "--max-steps 13 --checkpoint " + t.File("b")), &out), 0)
      << out;
  ASSERT_EQ(
      RunCommand(Train(data, "--epochs 3 --resume " + t.File("b") + " --checkpoint " + t.File("c")),
                 &out),
      0)
      << out;
  auto a = ReadCheckpoint(t.File("a"));
  auto b = ReadCheckpoint(t.File("b"));
  auto c = ReadCheckpoint(t.File("c"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(b->optimizer.kind, OptimizerKind::kAdamW);
  EXPECT_EQ(b->optimizer.label_smoothing, 0.1f);
  EXPECT_EQ(b->schedule.kind, LrScheduleKind::kCosine);
  EXPECT_EQ(b->schedule.warmup_epochs, 0.5f);
  EXPECT_EQ(b->schedule_span.steps_per_epoch, 10u);
  EXPECT_EQ(b->schedule_span.epochs, 3u);
  EXPECT_EQ(b->momentum.t.size(), 2 * b->params.t.size());
  EXPECT_EQ(a->step, 30u);
  EXPECT_EQ(c->step, 30u);
  EXPECT_EQ(c->optimizer.kind, OptimizerKind::kAdamW);
  EXPECT_TRUE(testing::BitIdentical(a->params, c->params));
  EXPECT_TRUE(testing::BitIdentical(a->momentum, c->momentum));
  EXPECT_FALSE(testing::BitIdentical(a->params, b->params));  // the resumed run did train

  // Each epoch's record and line carry the lr of its last step: W = ceil(0.5 * 10) = 5 warmup
  // steps, then 0.003 * (1 + cos(pi * (s - 5) / 25)) / 2; epoch 1 ends at step 9, epoch 2 at 19.
  const std::vector<nlohmann::json> m = ReadMetrics(t.File("m.jsonl"));
  std::vector<double> lrs;
  for (const auto& j : m) {
    if (j["event"] == "epoch") lrs.push_back(j["lr"].get<double>());
  }
  ASSERT_EQ(lrs.size(), 3u);
  const double pi = std::acos(-1.0);
  EXPECT_NEAR(lrs[0], 0.003 * (1 + std::cos(pi * 4 / 25)) / 2, 1e-9);
  EXPECT_NEAR(lrs[1], 0.003 * (1 + std::cos(pi * 14 / 25)) / 2, 1e-9);
  EXPECT_NEAR(lrs[2], 0.003 * (1 + std::cos(pi * 24 / 25)) / 2, 1e-9);
  EXPECT_NE(out.find(", lr "), std::string::npos) << out;
}

// With --batch-norm the running statistics are state too: the checkpoint holds them, so a run
// interrupted mid-epoch and resumed ends bit-identical to the straight run, statistics included.
// The flag must be given again (like --conv and --hidden: it shapes the model), and a run that
// forgets it is refused naming the model.
TEST(TrainCommand, ABatchNormResumedRunEndsBitIdenticalStatisticsIncluded) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string opts = "--epochs 3 --batch-norm ";
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, opts + "--checkpoint " + t.File("a")), &out), 0) << out;
  EXPECT_NE(out.find("batch norm"), std::string::npos) << out;  // the model line says it
  ASSERT_EQ(RunCommand(Train(data, opts + "--max-steps 13 --checkpoint " + t.File("b")), &out), 0)
      << out;
  ASSERT_EQ(
      RunCommand(Train(data, opts + "--resume " + t.File("b") + " --checkpoint " + t.File("c")),
                 &out),
      0)
      << out;
  auto a = ReadCheckpoint(t.File("a"));
  auto b = ReadCheckpoint(t.File("b"));
  auto c = ReadCheckpoint(t.File("c"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(b->config.batch_norm);
  ASSERT_EQ(b->running_stats.t.size(), 2 * b->config.conv.size());
  EXPECT_FALSE(testing::BitIdentical(b->running_stats, InitialRunningStats(b->config)));
  EXPECT_TRUE(testing::BitIdentical(a->params, c->params));
  EXPECT_TRUE(testing::BitIdentical(a->momentum, c->momentum));
  EXPECT_TRUE(testing::BitIdentical(a->running_stats, c->running_stats));
  EXPECT_FALSE(testing::BitIdentical(a->running_stats, b->running_stats));  // it went on

  EXPECT_EQ(RunCommand(Train(data, "--epochs 3 --resume " + t.File("b")), &out), 2) << out;
  EXPECT_NE(out.find("batch norm"), std::string::npos) << out;
}

// With --augment each sample's transform depends on (seed, epoch, sample index) only: a run
// interrupted mid-epoch and resumed (without --augment: the checkpoint holds it) trains on the
// same augmented samples and ends bit-identical to the straight run.
TEST(TrainCommand, AnAugmentedResumedRunEndsBitIdenticalToAStraightRun) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string augment = " --augment crop:2,flip,erase:0.5";
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 5 --max-steps 25 --checkpoint " + t.File("a") +
                                       " --metrics " + t.File("m.jsonl") + augment),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find(", augment crop:2,flip,erase:0.5"), std::string::npos) << out;
  const auto m = ReadMetrics(t.File("m.jsonl"));
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.front()["event"], "start");
  EXPECT_EQ(m.front()["augment"], "crop:2,flip,erase:0.5");
  ASSERT_EQ(
      RunCommand(Train(data, "--epochs 5 --max-steps 13 --checkpoint " + t.File("b") + augment),
                 &out),
      0)
      << out;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 5 --max-steps 25 --resume " + t.File("b") +
                                       " --checkpoint " + t.File("c")),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find(", augment crop:2,flip,erase:0.5"), std::string::npos) << out;
  ASSERT_EQ(
      RunCommand(Train(data, "--epochs 5 --max-steps 25 --checkpoint " + t.File("plain")), &out), 0)
      << out;
  auto a = ReadCheckpoint(t.File("a"));
  auto b = ReadCheckpoint(t.File("b"));
  auto c = ReadCheckpoint(t.File("c"));
  auto plain = ReadCheckpoint(t.File("plain"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && plain.ok());
  EXPECT_EQ(b->next_sample, 96u);  // the break falls mid-epoch
  EXPECT_EQ(c->step, a->step);
  EXPECT_EQ(c->epoch, a->epoch);
  EXPECT_EQ(c->next_sample, a->next_sample);
  EXPECT_TRUE(testing::BitIdentical(a->params, c->params));
  EXPECT_TRUE(testing::BitIdentical(a->momentum, c->momentum));
  EXPECT_FALSE(testing::BitIdentical(a->params, plain->params));  // augmentation changed training
}

TEST(TrainCommand, SigintFinishesTheStepWritesACheckpointAndExitsZero) {
  TempDir t;
  const std::string data = MakeDataset(t);
  const std::string log = t.File("log"), ckpt = t.File("i.ckpt");
  // Practically endless epochs; the signal goes once the first epoch line shows the handlers are
  // installed. The epoch cap only bounds the test if the signal were ignored.
  const std::string script =
      Train(data, "--epochs 100000 --checkpoint " + ckpt + " --metrics " + t.File("m.jsonl")) +
      " > " + log + " 2>&1 & pid=$!\n" + "for i in $(seq 1200); do grep -q '^epoch' " + log +
      " && break; sleep 0.05; done\nkill -INT $pid\nwait $pid\necho \"exit=$?\"\n";
  testing::WriteAll(t.File("run.sh"), script.data(), script.size());
  std::string out;
  ASSERT_EQ(RunCommand("timeout 120 sh " + t.File("run.sh"), &out), 0) << out;
  const auto logged = testing::ReadAll(log);
  const std::string text(logged.begin(), logged.end());
  EXPECT_NE(out.find("exit=0"), std::string::npos) << out << text;
  EXPECT_NE(text.find("ringfeed train: stopped by signal after step "), std::string::npos) << text;
  auto c = ReadCheckpoint(ckpt);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_GE(c->step, 10u);
  const auto m = ReadMetrics(t.File("m.jsonl"));
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.back()["event"], "end");
  EXPECT_EQ(m.back()["stopped_by"], "signal");
  EXPECT_EQ(m.back()["step"].get<uint64_t>(), c->step);
}

TEST(TrainCommand, FashionMnistSliceLowersTheLoss) {
  auto train = testing::LoadFashionMnist(testing::FashionMnistDir(), "train", 2048);
  auto test = testing::LoadFashionMnist(testing::FashionMnistDir(), "t10k", 1000);
  if (!train.ok() || !test.ok()) GTEST_SKIP() << "no Fashion-MNIST: " << train.status().ToString();
  TempDir t;
  DatasetSpec spec;
  spec.height = spec.width = 28;
  spec.num_classes = 10;
  for (auto [name, fm] : {std::pair{"train.rfd", &*train}, std::pair{"test.rfd", &*test}}) {
    auto w = DatasetWriter::Create(t.File(name), spec, WriterOptions{});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append(fm->pixels.data(), fm->labels.data(), fm->count).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  std::string out;
  // 4 epochs of 32 steps.
  ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " train --data " + t.File("train.rfd") +
                           " --test " + t.File("test.rfd") +
                           " --device auto --epochs 4 --batch-size 64 --lr 0.05 --conv 8,16 "
                           "--hidden 32 --metrics " +
                           t.File("m.jsonl"),
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("epoch 4/4: train loss "), std::string::npos) << out;
  EXPECT_NE(out.find("host RSS "), std::string::npos) << out;
  const auto m = ReadMetrics(t.File("m.jsonl"));
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0]["event"], "start");
  EXPECT_EQ(m[0]["mode"], "streaming");
  EXPECT_NE(m[0]["source"].get<std::string>().find("streaming: "), std::string::npos);
  EXPECT_GE(m[0]["setup_seconds"].get<double>(), 0.0);
  EXPECT_EQ(m[1]["event"], "epoch");
  EXPECT_EQ(m[4]["step"].get<uint64_t>(), 128u);
  const double first = m[1]["train_loss"], last = m[4]["train_loss"];
  EXPECT_LT(last, first) << out;
  EXPECT_LT(last, 0.8 * std::log(10.0)) << out;
  EXPECT_GT(m[4]["test_accuracy"].get<double>(), 0.6) << out;
  EXPECT_GT(m[4]["rss_bytes"].get<uint64_t>(), 0u);
  EXPECT_GE(m[4]["peak_rss_bytes"].get<uint64_t>(), m[4]["rss_bytes"].get<uint64_t>());
  EXPECT_GE(m[4]["reader_held_share"].get<double>(), 0.0);
  EXPECT_LE(m[4]["reader_held_share"].get<double>(), 1.0);
  EXPECT_EQ(m[5]["event"], "end");
  EXPECT_EQ(m[5]["stopped_by"], "epochs");
  EXPECT_GT(m[5]["first_batch_ms"].get<double>(), 0.0);
}

// Where no GPU can be used (no CUDA build, or no device), --device cuda says so; where one can,
// it trains. Either way it is the one or the other, never a crash.
TEST(TrainCommand, CudaDeviceTrainsOrSaysWhyItCannot) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  const int rc = RunCommand(ProgramPath("ringfeed") + " train --data " + data +
                                " --device cuda --batch-size 32 --conv 4,8 --hidden 16",
                            &out);
  if (rc == 0) {
    EXPECT_NE(out.find("backend: cuda device 0"), std::string::npos) << out;
    EXPECT_NE(out.find("epoch 1/1: train loss"), std::string::npos) << out;
  } else {
    EXPECT_EQ(rc, 2) << out;
    EXPECT_TRUE(out == "ringfeed: --device cuda: no CUDA device found\n" ||
                out == "ringfeed: --device cuda: this build has no CUDA backend\n")
        << out;
  }
}

// Where no GPU can be used, --mode managed says so in one line; where one can, it trains.
TEST(TrainCommand, ManagedModeTrainsOrSaysItNeedsAGpu) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  const int rc = RunCommand(ProgramPath("ringfeed") + " train --data " + data +
                                " --mode managed --batch-size 32 --conv 4,8 --hidden 16",
                            &out);
  if (rc == 0) {
    EXPECT_NE(out.find("managed: "), std::string::npos) << out;
    EXPECT_NE(out.find("epoch 1/1: train loss"), std::string::npos) << out;
  } else {
    EXPECT_EQ(rc, 2) << out;
    EXPECT_EQ(out,
              "ringfeed: --mode managed needs a GPU (CUDA managed memory); without one, use --mode "
              "streaming\n")
        << out;
  }
}

// --dump-order writes each epoch's visiting order: a permutation of the samples, another each
// epoch, the same again for the same seed.
TEST(TrainCommand, DumpOrderWritesAPermutationPerEpoch) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  for (const char* name : {"a", "b"}) {
    ASSERT_EQ(
        RunCommand(Train(data, "--epochs 2 --shuffle-window 2 --dump-order " + t.File(name)), &out),
        0)
        << out;
  }
  std::ifstream a(t.File("a")), b(t.File("b"));
  const std::string text_a((std::istreambuf_iterator<char>(a)), std::istreambuf_iterator<char>());
  const std::string text_b((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text_a, text_b);
  std::vector<std::vector<uint64_t>> epochs;
  std::istringstream in(text_a);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# epoch ", 0) == 0) {
      epochs.emplace_back();
    } else {
      ASSERT_FALSE(epochs.empty());
      epochs.back().push_back(std::stoull(line));
    }
  }
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_NE(epochs[0], epochs[1]);
  for (auto e : epochs) {
    std::sort(e.begin(), e.end());
    ASSERT_EQ(e.size(), 300u);
    for (uint64_t i = 0; i < 300; ++i) ASSERT_EQ(e[i], i);
  }
}

// The samples an order file lists, without its "# epoch" lines.
std::vector<uint64_t> OrderSamples(const std::string& path) {
  std::ifstream in(path);
  std::vector<uint64_t> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) != 0) out.push_back(std::stoull(line));
  }
  return out;
}

// The checkpoint records the epoch order's shuffle (mode and window): a resume that does not
// repeat --shuffle/--shuffle-window still continues the same order, skipping and repeating nothing.
TEST(TrainCommand, ResumeContinuesTheCheckpointsShuffleWithoutItsFlags) {
  TempDir t;
  const std::string data = MakeDataset(t);  // 6 chunks: a window of 2 differs from the default
  std::string out;
  for (const std::string order : {"--shuffle-window 2", "--shuffle none"}) {
    SCOPED_TRACE(order);
    // Each order its own files: a resumed run appends to its --dump-order.
    const std::string n = order == "--shuffle none" ? "-none" : "-window";
    const std::string s = t.File("s" + n), p1 = t.File("p1" + n), p2 = t.File("p2" + n);
    ASSERT_EQ(RunCommand(Train(data, "--epochs 2 " + order + " --dump-order " + s), &out), 0)
        << out;
    // 13 steps: the first epoch (10 steps) and 3 of the second.
    ASSERT_EQ(RunCommand(Train(data, "--epochs 2 " + order + " --max-steps 13 --overwrite " +
                                         "--checkpoint " + t.File("c") + " --dump-order " + p1),
                         &out),
              0)
        << out;
    ASSERT_EQ(
        RunCommand(Train(data, "--epochs 2 --resume " + t.File("c") + " --dump-order " + p2), &out),
        0)
        << out;
    // The run says which order it follows (it once said "64-chunk shuffle windows" for none).
    const std::string said =
        order == "--shuffle none" ? "; stored order, " : "; 2-chunk shuffle windows, ";
    EXPECT_NE(out.find(said), std::string::npos) << out;
    std::vector<uint64_t> resumed = OrderSamples(p1);
    const std::vector<uint64_t> rest = OrderSamples(p2);
    resumed.insert(resumed.end(), rest.begin(), rest.end());
    EXPECT_EQ(resumed, OrderSamples(s));
    EXPECT_EQ(resumed.size(), 600u);
  }
}

// --config reads the same options from a file; the command line wins where both set one.
TEST(TrainCommand, ConfigFileSetsOptionsAndTheCommandLineWins) {
  TempDir t;
  const std::string data = MakeDataset(t);
  {
    std::ofstream f(t.File("train.cfg"));
    f << "# a comment\nepochs = 2\nbatch-size = 50\nconv = 4,8\nhidden = 16\ndevice = cpu\n";
  }
  std::string out;
  ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " train --data " + data + " --config " +
                           t.File("train.cfg") + " --batch-size 60",
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("conv 4,8, hidden 16"), std::string::npos) << out;
  EXPECT_NE(out.find("batch 60"), std::string::npos) << out;
  EXPECT_NE(out.find("epoch 2/2: train loss"), std::string::npos) << out;
  EXPECT_EQ(RunCommand(ProgramPath("ringfeed") + " train --data " + data + " --config " +
                           t.File("missing.cfg"),
                       &out),
            2);
  EXPECT_EQ(out, "ringfeed train: cannot read --config " + t.File("missing.cfg") +
                     ": No such file or directory\n");
}

// A chunk that fails its checksum mid-training stops the run naming file and chunk, exit 1, and
// the checkpoint written before it is still whole.
TEST(TrainCommand, ACorruptChunkStopsTrainingAndLeavesTheCheckpointIntact) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 1 --checkpoint " + t.File("ck")), &out), 0) << out;
  auto d = Dataset::Open(data);
  ASSERT_TRUE(d.ok());
  const uint64_t last = d->chunk_count() - 1;
  testing::FlipBit(data, d->chunk(last).entry.offset + 10, 1);
  EXPECT_EQ(RunCommand(Train(data, "--epochs 3 --checkpoint-every 1 --checkpoint " + t.File("ck") +
                                       " --resume " + t.File("ck")),
                       &out),
            1);
  EXPECT_NE(out.find(data), std::string::npos) << out;
  EXPECT_NE(out.find("chunk " + std::to_string(last)), std::string::npos) << out;
  ModelConfig c;
  c.channels = 1;
  c.height = c.width = 12;
  c.classes = 4;
  c.conv = {4, 8};
  c.hidden = 16;
  const auto ck = LoadCheckpoint(t.File("ck"), c);
  EXPECT_TRUE(ck.ok()) << ck.status().ToString();
}

// The test split streams through its own loader, in stored order, every sample each epoch (211
// samples in 4 chunks of 56, batches of 32 and of 7 with partial last ones): with lr 0 the
// weights never change, so every evaluation of every epoch, at either batch size, sees the same
// function over the same samples.
TEST(TrainCommand, EveryEvaluationStreamsTheWholeTestSplit) {
  TempDir t, u;
  const std::string data = MakeDataset(t);
  const std::string test = MakeDataset(u, 211);
  std::vector<nlohmann::json> epochs;
  for (const char* batch : {"32", "7"}) {
    std::string out;
    const std::string metrics = t.File(std::string("m") + batch);
    ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " train --data " + data +
                             " --device cpu --conv 4,8 --hidden 16 --epochs 2 --lr 0 "
                             "--batch-size " +
                             batch + " --test " + test + " --metrics " + metrics,
                         &out),
              0)
        << out;
    EXPECT_NE(out.find("test accuracy "), std::string::npos) << out;
    for (const auto& j : ReadMetrics(metrics)) {
      if (j["event"] == "epoch") epochs.push_back(j);
    }
  }
  ASSERT_EQ(epochs.size(), 4u);
  for (const auto& j : epochs) {
    EXPECT_EQ(j["test_samples"].get<uint64_t>(), 211u);
    EXPECT_EQ(j["test_accuracy"].get<double>(), epochs[0]["test_accuracy"].get<double>());
    EXPECT_NEAR(j["test_loss"].get<double>(), epochs[0]["test_loss"].get<double>(),
                1e-6 * std::fabs(epochs[0]["test_loss"].get<double>()));
  }
}

// A damaged chunk of the test split ends the run at the evaluation that reads it: exit 1, the
// test file and the chunk named.
TEST(TrainCommand, ACorruptTestChunkEndsTheRunNamingItsFileAndChunk) {
  TempDir t, u;
  const std::string data = MakeDataset(t);
  const std::string test = MakeDataset(u, 211);
  auto d = Dataset::Open(test);
  ASSERT_TRUE(d.ok());
  testing::FlipBit(test, d->chunk(2).entry.offset + 10, 1);
  std::string out;
  EXPECT_EQ(RunCommand(Train(data, "--epochs 2 --test " + test), &out), 1) << out;
  EXPECT_NE(out.find(test), std::string::npos) << out;
  EXPECT_NE(out.find("chunk 2"), std::string::npos) << out;
}

// --trace writes a Chrome trace with every stage's spans, each row named.
TEST(TrainCommand, TraceHasReadVerifyCopyAndComputeSpans) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(RunCommand(Train(data, "--epochs 2 --trace " + t.File("trace.json")), &out), 0) << out;
  std::ifstream in(t.File("trace.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  std::map<std::string, int> spans;
  std::set<std::string> rows;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++spans[e["cat"].get<std::string>() + "/" + e["name"].get<std::string>()];
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    } else if (e["ph"] == "M") {
      rows.insert(e["args"]["name"].get<std::string>());
    }
  }
  auto d = Dataset::Open(data);
  ASSERT_TRUE(d.ok());
  const int chunks = static_cast<int>(d->chunk_count());
  EXPECT_EQ(spans["read/read"], 2 * chunks);
  EXPECT_EQ(spans["verify/verify"], 2 * chunks);
  EXPECT_EQ(spans["copy/copy"], 2 * chunks);
  EXPECT_EQ(spans["compute/train step"], 2 * 10);  // 300 samples in batches of 32: 10 an epoch
  // Whether the compute thread waits for data at all is timing: the copier may have the first
  // window in before the trainer asks (seen under AddressSanitizer on a loaded machine). Where
  // it waits, the span is on the compute row; pipeline_streaming_source_test makes it wait and
  // checks the span (StreamingSource.TheWaitForDataIsCountedAndTracedOnTheComputeRow).
  for (const auto& span : spans) {
    if (span.first.ends_with("/wait for data")) {
      EXPECT_EQ(span.first, "compute/wait for data");
    }
  }
  EXPECT_EQ(rows, (std::set<std::string>{"read", "verify", "copy", "compute"}));
}

// Issue 26, item 7: on the CPU the trace showed training steps of about 1 us, 90 ms apart: the
// span began after the step had computed. A step's span covers its compute, so the steps fill
// most of the time from the first step's start to the last one's end.
TEST(TrainCommand, CpuTraceStepSpansCoverTheirCompute) {
  TempDir t;
  const std::string data = MakeDataset(t);
  std::string out;
  ASSERT_EQ(RunCommand(ProgramPath("ringfeed") + " train " + data +
                           " --device cpu --conv 16,32 --hidden 64 --batch-size 100 --epochs 3 "
                           "--shuffle none --trace " +
                           t.File("trace.json"),
                       &out),
            0)
      << out;
  std::ifstream in(t.File("trace.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  double busy = 0, first = 1e300, last = 0;
  int steps = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X" || e["name"] != "train step") continue;
    ++steps;
    busy += e["dur"].get<double>();
    first = std::min(first, e["ts"].get<double>());
    last = std::max(last, e["ts"].get<double>() + e["dur"].get<double>());
  }
  ASSERT_EQ(steps, 9);
  EXPECT_GT(busy, 0.25 * (last - first)) << busy << " us busy of " << last - first << " us";
}

}  // namespace
}  // namespace rf
