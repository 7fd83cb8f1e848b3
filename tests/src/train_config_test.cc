// The training configuration without running training: the command line parsed once into a typed
// TrainConfig (src/train_flags.h), its validation, a resumed checkpoint's overrides, the loaders'
// options derived from it (src/train_config.h), and the checks on the run's files.
#include "src/train_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "src/command_checks.h"
#include "src/train_flags.h"
#include "src/train_options.h"
#include "tests/testing/temp_dir.h"
#if RINGFEED_HAVE_CUDA
#include "pipeline/sources/managed_source.h"  // CUDA headers: the managed mode is built with CUDA only
#endif

namespace rf {
namespace {

using testing::TempDir;

Result<TrainConfig> Parse(std::vector<std::string> args) {
  Result<TrainFlags> flags = ReadTrainFlags(args);
  if (!flags.ok()) return flags.status();
  return TrainConfigFromFlags(*flags);
}

// The Usage message a command line is refused with ("" where it is accepted).
std::string Refusal(std::vector<std::string> args) {
  Result<TrainConfig> c = Parse(std::move(args));
  if (c.ok()) return "";
  EXPECT_TRUE(c.status().IsUsage()) << c.status().ToString();
  return c.status().ToString();
}

TEST(TrainConfig, DefaultsComeFromTheComponentsOwnOptions) {
  Result<TrainConfig> c = Parse({"--data", "d.rfd"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const PipelineConfig& p = c->pipeline;
  EXPECT_EQ(p.data, "d.rfd");
  EXPECT_EQ(p.mode, PipelineMode::kStreaming);
  EXPECT_EQ(p.device, DeviceKind::kAuto);
  EXPECT_EQ(p.order.batch_size, OrderSettings{}.batch_size);
  EXPECT_EQ(p.order.drop_last, OrderSettings{}.drop_last);
  EXPECT_EQ(p.order.shuffle, ShuffleMode::kWindow);
  EXPECT_EQ(p.order.shuffle_window, OrderSettings{}.shuffle_window);
  EXPECT_EQ(p.order.seed, 1u);
  EXPECT_TRUE(p.verify);
  EXPECT_EQ(p.streaming.io, ReaderOptions{}.mode);
  EXPECT_EQ(p.streaming.queue_depth, ReaderOptions{}.queue_depth);
  EXPECT_EQ(p.streaming.read_bytes, ReaderOptions{}.read_bytes);
  EXPECT_EQ(p.streaming.ring_slots, StreamingOptions{}.ring_slots);
  EXPECT_EQ(p.streaming.copy_streams, kDefaultCopyStreams);
#if RINGFEED_HAVE_CUDA
  EXPECT_EQ(p.managed.prefetch_batches, ManagedOptions{}.prefetch_batches);
  EXPECT_EQ(p.managed.advise, ManagedOptions{}.advise);
  EXPECT_EQ(p.managed.oversubscribe, ManagedOptions{}.oversubscribe);
#endif
  EXPECT_EQ(c->precision, Precision::kBf16);
  EXPECT_TRUE(c->cuda_graph);
  EXPECT_EQ(c->epochs, 1u);
  EXPECT_EQ(c->conv, ModelConfig{}.conv);
  EXPECT_EQ(c->hidden, ModelConfig{}.hidden);
  EXPECT_EQ(c->optimizer.lr, OptimizerConfig{}.lr);
  EXPECT_EQ(c->optimizer.momentum, OptimizerConfig{}.momentum);
  EXPECT_EQ(c->optimizer.weight_decay, OptimizerConfig{}.weight_decay);
  EXPECT_EQ(c->checkpoint_every, 0u);
  EXPECT_EQ(c->max_steps, 0u);

  // And they come through the derivation unchanged where the config does not set them.
  const LoaderOptions train = TrainLoaderOptions(*c);
  const StreamingOptions s = StreamingOptionsFor(train.pipeline, train.epochs);
  EXPECT_EQ(s.feeder.reader.read_bytes, ReaderOptions{}.read_bytes);
  EXPECT_EQ(s.feeder.reader.max_retries, ReaderOptions{}.max_retries);
  EXPECT_EQ(s.feeder.reader.register_buffers, ReaderOptions{}.register_buffers);
  EXPECT_EQ(s.feeder.decode_threads, FeederOptions{}.decode_threads);
  EXPECT_EQ(s.order.first_window_chunks, OrderSettings{}.first_window_chunks);
#if RINGFEED_HAVE_CUDA
  EXPECT_EQ(ManagedOptionsFor(train.pipeline).load_threads, ManagedOptions{}.load_threads);
#endif
  EXPECT_EQ(train.pipeline.streaming.copy_streams, kDefaultCopyStreams);
  EXPECT_EQ(train.output_buffers, 0u);  // the backends decode for themselves
}

TEST(TrainConfig, EveryOptionReachesItsComponent) {
  Result<TrainConfig> c =
      Parse({"--data",       "d.rfd", "--batch-size",     "77", "--epochs",           "3",
             "--seed",       "5",     "--shuffle-window", "9",  "--drop-last",        "--no-verify",
             "--io",         "pread", "--queue-depth",    "3",  "--read-size",        "64KiB",
             "--ring-slots", "5",     "--copy-streams",   "4",  "--precision",        "tf32",
             "--cuda-graph", "off",   "--checkpoint",     "ck", "--checkpoint-every", "6",
             "--max-steps",  "11",    "--metrics",        "m",  "--reduce-buckets",   "3"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const LoaderOptions train = TrainLoaderOptions(*c), test_split = TestLoaderOptions(*c);
  // Every source's options derive from the training loader's config, in one place.
  const StreamingOptions streaming = StreamingOptionsFor(train.pipeline, train.epochs);
  // One batch size, everywhere: the backend's largest batch (the config's) and every source's.
  EXPECT_EQ(c->pipeline.order.batch_size, 77u);
  EXPECT_EQ(train.pipeline.order.batch_size, 77u);
  EXPECT_EQ(streaming.order.batch_size, 77u);
  EXPECT_EQ(test_split.pipeline.order.batch_size, 77u);
  // The order: the same for both modes.
  EXPECT_EQ(streaming.order.shuffle, ShuffleMode::kWindow);
  EXPECT_EQ(streaming.order.shuffle_window, 9u);
  EXPECT_EQ(streaming.order.seed, 5u);
  EXPECT_TRUE(streaming.order.drop_last);
  EXPECT_FALSE(streaming.feeder.verify);
#if RINGFEED_HAVE_CUDA
  const ManagedOptions managed = ManagedOptionsFor(train.pipeline);
  EXPECT_EQ(managed.order.batch_size, 77u);
  EXPECT_EQ(managed.order.shuffle, streaming.order.shuffle);
  EXPECT_EQ(managed.order.shuffle_window, streaming.order.shuffle_window);
  EXPECT_EQ(managed.order.seed, streaming.order.seed);
  EXPECT_TRUE(managed.order.drop_last);
  EXPECT_FALSE(managed.verify);
#endif
  EXPECT_EQ(streaming.feeder.reader.mode, IoMode::kPread);
  EXPECT_EQ(streaming.feeder.reader.queue_depth, 3u);
  EXPECT_EQ(streaming.feeder.reader.read_bytes, 65536u);
  EXPECT_EQ(streaming.ring_slots, 5u);
  EXPECT_EQ(streaming.epochs, 3u);
  EXPECT_EQ(train.pipeline.streaming.copy_streams, 4u);
  EXPECT_EQ(c->precision, Precision::kTf32);
  EXPECT_FALSE(c->cuda_graph);
  EXPECT_EQ(c->reduce_buckets, 3u);
  // The test split: every sample, in stored order, one rank, streamed; the reader's options the
  // training split's.
  const StreamingOptions test = StreamingOptionsFor(test_split.pipeline, test_split.epochs);
  EXPECT_EQ(test.order.shuffle, ShuffleMode::kNone);
  EXPECT_EQ(test.order.shuffle_window, 4u);  // a small staging area
  EXPECT_FALSE(test.order.drop_last);
  EXPECT_EQ(test.order.world_size, 1u);
  EXPECT_EQ(test.epochs, c->epochs);  // one pass an evaluation: the plan ends with the last
  EXPECT_EQ(test_split.pipeline.mode, PipelineMode::kStreaming);
  EXPECT_EQ(test.feeder.reader.mode, IoMode::kPread);
  EXPECT_EQ(test.ring_slots, 5u);
  // The loop's: read from the config itself (src/trainer.h).
  EXPECT_EQ(c->epochs, 3u);
  EXPECT_EQ(c->checkpoint, "ck");
  EXPECT_EQ(c->checkpoint_every, 6u);
  EXPECT_EQ(c->max_steps, 11u);
  EXPECT_EQ(c->metrics, "m");
}

TEST(TrainConfig, ManagedModeTakesItsOwnOptions) {
  Result<TrainConfig> c =
      Parse({"--data", "d.rfd", "--mode", "managed", "--device", "cuda", "--managed-prefetch", "2",
             "--managed-advise", "--managed-oversubscribe", "--shuffle", "none"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const PipelineConfig p = TrainLoaderOptions(*c).pipeline;
  EXPECT_EQ(p.mode, PipelineMode::kManaged);
  EXPECT_EQ(p.device, DeviceKind::kCuda);
  EXPECT_EQ(p.managed.prefetch_batches, 2u);
  EXPECT_TRUE(p.managed.advise);
  EXPECT_TRUE(p.managed.oversubscribe);
  EXPECT_EQ(p.order.shuffle, ShuffleMode::kNone);
#if RINGFEED_HAVE_CUDA
  const ManagedOptions managed = ManagedOptionsFor(p);
  EXPECT_EQ(managed.prefetch_batches, 2u);
  EXPECT_TRUE(managed.advise);
  EXPECT_TRUE(managed.oversubscribe);
  EXPECT_EQ(managed.order.shuffle, ShuffleMode::kNone);
#endif
}

TEST(TrainConfig, ReadSizeIsOneRuleWithOneMessage) {
  for (const char* ok : {"4096", "4KiB", "4MiB", "1GiB"}) {
    EXPECT_EQ(Refusal({"--data", "d.rfd", "--read-size", ok}), "") << ok;
  }
  Result<TrainConfig> c = Parse({"--data", "d.rfd", "--read-size", "256KiB"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->pipeline.streaming.read_bytes, 256u << 10);
  const std::string rule = "--read-size must be a multiple of 4KiB from 4KiB to 1GiB, got ";
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--read-size", "6000"}), rule + "6000");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--read-size", "0"}), rule + "0");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--read-size", "2GiB"}), rule + "2GiB");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--read-size", "lots"}), rule + "'lots'");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--read-size", "0x1000"}), rule + "'0x1000'");
  // A config built in C++ is held to the same rule by Validate.
  TrainConfig built = *c;
  built.pipeline.streaming.read_bytes = 6000;
  EXPECT_EQ(built.Validate().ToString(), rule + "6000");
}

TEST(TrainConfig, ManagedModeRefusesEveryStreamingOnlyFlagNamingIt) {
  const std::vector<std::pair<std::string, std::string>> flags = {{"--io", "pread"},
                                                                  {"--read-size", "8MiB"},
                                                                  {"--queue-depth", "4"},
                                                                  {"--ring-slots", "4"},
                                                                  {"--copy-streams", "3"}};
  for (const auto& [flag, value] : flags) {
    SCOPED_TRACE(flag);
    EXPECT_EQ(Refusal({"--data", "d.rfd", "--mode", "managed", flag, value}),
              flag +
                  " does nothing with --mode managed (it sets the streaming reader and ring); "
                  "leave it out");
    EXPECT_EQ(Refusal({"--data", "d.rfd", flag, value}), "");  // streaming: it does something
  }
  // Given at its default value is still given.
  EXPECT_NE(Refusal({"--data", "d.rfd", "--mode", "managed", "--io", "direct"}), "");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--mode", "managed"}), "");
}

TEST(TrainConfig, StreamingModeRefusesTheManagedFlags) {
  for (std::vector<std::string> flag : {std::vector<std::string>{"--managed-prefetch", "1"},
                                        {"--managed-advise"},
                                        {"--managed-oversubscribe"}}) {
    SCOPED_TRACE(flag[0]);
    std::vector<std::string> args = {"--data", "d.rfd"};
    args.insert(args.end(), flag.begin(), flag.end());
    EXPECT_EQ(Refusal(args), flag[0] +
                                 " does nothing with --mode streaming (managed mode only); leave "
                                 "it out");
    args.insert(args.end(), {"--mode", "managed"});
    EXPECT_EQ(Refusal(args), "");
  }
}

TEST(TrainConfig, CpuDeviceRefusesTheGpuFlags) {
  for (std::vector<std::string> flag : {std::vector<std::string>{"--copy-streams", "2"},
                                        {"--precision", "fp32"},
                                        {"--cuda-graph", "off"},
                                        {"--reduce-buckets", "2"}}) {
    SCOPED_TRACE(flag[0]);
    std::vector<std::string> args = {"--data", "d.rfd", "--device", "cpu"};
    args.insert(args.end(), flag.begin(), flag.end());
    EXPECT_EQ(Refusal(args), flag[0] + " does nothing with --device cpu (GPU only); leave it out");
    args[3] = "auto";  // auto may find a GPU: the flag may matter
    EXPECT_EQ(Refusal(args), "");
  }
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--device", "cpu", "--mode", "managed"}),
            "--mode managed needs a GPU (CUDA managed memory); without one, use --mode streaming");
}

TEST(TrainConfig, OptionsFromAConfigFileCountAsGiven) {
  TempDir t;
  std::ofstream(t.File("a.cfg")) << "mode = managed\nqueue-depth = 4\n";
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--config", t.File("a.cfg")}),
            "--queue-depth does nothing with --mode managed (it sets the streaming reader and "
            "ring); leave it out");
}

TEST(TrainConfig, BadValuesAreUsageErrorsNamingTheFlag) {
  EXPECT_EQ(Refusal({"--epochs", "1"}),
            "no dataset given: name it as DATA or --data DATA (see --help)");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--batch-size", "0"}),
            "--batch-size must be a whole number from 1 to 1048576, got 0");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--batch-size", "-5"}),
            "--batch-size must be a whole number from 1 to 1048576, got '-5'");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--epochs", "0"}),
            "--epochs must be a whole number from 1 to 4294967295, got 0");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--ring-slots", "1"}),
            "--ring-slots must be a whole number from 2 to 1024, got 1");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--shuffle-window", "0"}),
            "--shuffle-window must be a whole number from 1 to 4096, got 0");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--queue-depth", "0"}),
            "--queue-depth must be a whole number from 1 to 32768, got 0");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--copy-streams", "0"}),
            "--copy-streams must be a whole number from 1 to 16, got 0");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--mode", "paged"}),
            "--mode must be streaming or managed, got \"paged\"");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--shuffle", "full"}),
            "--shuffle must be window or none, got \"full\"");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--io", "mmap"}),
            "--io must be direct, buffered or pread, got \"mmap\"");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--conv", "8,,16"}),
            "--conv wants comma-separated channel counts, got \"8,,16\"");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--cuda-graph", "yes"}),
            "--cuda-graph must be on or off, got 'yes'");
  for (const char* bad : {"0", "1025", "2x", "", "-1", "Auto"}) {
    EXPECT_EQ(Refusal({"--data", "d.rfd", "--reduce-buckets", bad}),
              std::string("--reduce-buckets must be auto or a whole number from 1 to 1024, got '") +
                  bad + "'");
  }
  Result<TrainConfig> buckets = Parse({"--data", "d.rfd", "--reduce-buckets", "auto"});
  ASSERT_TRUE(buckets.ok());
  EXPECT_EQ(buckets->reduce_buckets, 0u);
  buckets = Parse({"--data", "d.rfd", "--reduce-buckets", "1024"});
  ASSERT_TRUE(buckets.ok());
  EXPECT_EQ(buckets->reduce_buckets, 1024u);
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--lr", "nan"}),
            "--lr must be a finite number >= 0, got 'nan'");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--momentum", "inf"}),
            "--momentum must be a number in [0, 1], got 'inf'");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--weight-decay", "-0.5"}),
            "--weight-decay must be a number in [0, 1], got -0.5");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--no-such-flag"}),
            "unknown option '--no-such-flag' (see --help)");
}

TEST(TrainConfig, OptimizerScheduleAndSmoothingFlagsReachTheConfig) {
  Result<TrainConfig> c =
      Parse({"--data", "d.rfd", "--optimizer", "adamw", "--lr-schedule", "onecycle",
             "--warmup-epochs", "1.5", "--label-smoothing", "0.1", "--beta1", "0.8", "--beta2",
             "0.99", "--eps", "1e-6", "--weight-decay", "0.05"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->optimizer.kind, OptimizerKind::kAdamW);
  EXPECT_EQ(c->schedule.kind, LrScheduleKind::kOneCycle);
  EXPECT_EQ(c->schedule.warmup_epochs, 1.5f);
  EXPECT_EQ(c->optimizer.label_smoothing, 0.1f);
  EXPECT_EQ(c->optimizer.beta1, 0.8f);
  EXPECT_EQ(c->optimizer.beta2, 0.99f);
  EXPECT_EQ(c->optimizer.eps, 1e-6f);
  EXPECT_EQ(c->optimizer.weight_decay, 0.05f);
  // Defaults: SGD, constant, no warmup, no smoothing.
  c = Parse({"--data", "d.rfd"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->optimizer.kind, OptimizerKind::kSgd);
  EXPECT_EQ(c->schedule.kind, LrScheduleKind::kConstant);
  EXPECT_EQ(c->schedule.warmup_epochs, 0.f);
  EXPECT_EQ(c->optimizer.label_smoothing, 0.f);
}

TEST(TrainConfig, OptimizerFlagsOutOfRangeOrForTheOtherOptimizerAreRefusedNamingThem) {
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--optimizer", "adam"}),
            "--optimizer must be sgd or adamw, got \"adam\"");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--lr-schedule", "linear"}),
            "--lr-schedule must be constant, step, cosine or onecycle, got \"linear\"");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--warmup-epochs", "nan"}),
            "--warmup-epochs must be a number in [0, 4294967040], got 'nan'");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--warmup-epochs", "-1"}),
            "--warmup-epochs must be a number in [0, 4294967040], got -1");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--label-smoothing", "1"}),
            "--label-smoothing must be a number in [0, 1), got 1");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--label-smoothing", "nan"}),
            "--label-smoothing must be a number in [0, 1), got 'nan'");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--optimizer", "adamw", "--beta2", "1"}),
            "--beta2 must be a number in [0, 1), got 1");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--optimizer", "adamw", "--beta1", "inf"}),
            "--beta1 must be a number in [0, 1), got 'inf'");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--optimizer", "adamw", "--eps", "0"}),
            "--eps must be a number in (0, 1], got 0");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--optimizer", "adamw", "--momentum", "0.5"}),
            "--momentum does nothing with --optimizer adamw (SGD only); leave it out");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--beta1", "0.5"}),
            "--beta1 does nothing with --optimizer sgd (AdamW only); leave it out");
  EXPECT_EQ(Refusal({"--data", "d.rfd", "--eps", "1e-6"}),
            "--eps does nothing with --optimizer sgd (AdamW only); leave it out");
}

// The help is made from the declarations: every option the command takes, its value's form, its
// bounds, its default and where it does something.
TEST(TrainConfig, HelpListsEveryOptionWithItsDefaultAndWhatIsRefused) {
  Result<TrainFlags> f = ReadTrainFlags({"--help"});
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->help);
  for (const OptionSpec& s : TrainOptionTable().Specs(kTrainCommand)) {
    const std::string line = "  " + OptionName(s, OptionFace::kCommandLine);
    EXPECT_TRUE(f->help_text.find(line + " ") != std::string::npos ||
                f->help_text.find(line + "\n") != std::string::npos)
        << s.name << "\n"
        << f->help_text;
  }
  // The text with its wrapping undone, to find phrases a line break may have split.
  std::string flat;
  for (size_t i = 0; i < f->help_text.size(); ++i) {
    if (f->help_text[i] != '\n') {
      flat += f->help_text[i];
      continue;
    }
    while (i + 1 < f->help_text.size() && f->help_text[i + 1] == ' ') ++i;
    flat += ' ';
  }
  for (const char* o : {"--batch-size N ",
                        "a whole number from 1 to 1048576; default 128)",
                        "--read-size SIZE",
                        "default 4MiB",
                        "--queue-depth N",
                        "from 1 to 32768; default 8",
                        "--io direct|buffered|pread",
                        "--mode streaming|managed",
                        "--device auto|cuda|cpu",
                        "--precision bf16|tf32|fp32",
                        "--cuda-graph on|off",
                        "--lr X",
                        "default 0.01",
                        "--weight-decay X",
                        "default 0.0005",
                        "--eps X",
                        "default 1e-08",
                        "--conv C1,C2,...",
                        "default 32,64,128",
                        "--drop-last",
                        "--no-verify",
                        "--trace FILE",
                        "--config FILE",
                        "--data DATA (or a bare DATA)",
                        "only with --mode streaming",
                        "only with --mode managed",
                        "only with --device auto|cuda",
                        "only with --optimizer adamw",
                        "only with --optimizer sgd",
                        "on the CPU and the GPU",
                        "a checkpoint records it"}) {
    EXPECT_NE(flat.find(o), std::string::npos) << o << "\n" << f->help_text;
  }
  // Item 7 of issue 26: the help contradicted the program.
  EXPECT_EQ(f->help_text.find("does not hold it"), std::string::npos);
  EXPECT_EQ(f->help_text.find("CPU backend only"), std::string::npos);
}

TEST(TrainConfig, ResumeTakesSeedBatchSizeSgdAndShuffleFromTheCheckpoint) {
  Result<TrainConfig> parsed = Parse({"--data", "d.rfd", "--resume", "r.ckpt", "--batch-size", "10",
                                      "--seed", "2", "--lr", "0.2", "--shuffle-window", "4"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  Checkpoint ck;
  ck.order.seed = 42;
  ck.order.batch_size = 33;
  ck.optimizer = OptimizerConfig{0.5f, 0.25f, 0.125f};
  ck.order.shuffle_window = 7;
  ck.order.drop_last = true;  // not recorded: the config's stays
  uint64_t position = 0;

  ck.optimizer.kind = OptimizerKind::kAdamW;
  ck.optimizer.beta2 = 0.98f;
  ck.optimizer.label_smoothing = 0.2f;
  ck.schedule = LrScheduleConfig{LrScheduleKind::kStep, 2.5f};
  ck.schedule_span = LrScheduleSpan{17, 6};

  TrainConfig c = *parsed;
  ASSERT_TRUE(ApplyCheckpoint(ck, &c, &position).ok());
  EXPECT_EQ(c.optimizer.kind, OptimizerKind::kAdamW);
  EXPECT_EQ(c.optimizer.beta2, 0.98f);
  EXPECT_EQ(c.optimizer.label_smoothing, 0.2f);
  EXPECT_EQ(c.schedule.kind, LrScheduleKind::kStep);
  EXPECT_EQ(c.schedule.warmup_epochs, 2.5f);
  // The recorded span wins over one computed from this run's data and epochs.
  EXPECT_EQ(ScheduleSpanFor(c, 1000).steps_per_epoch, 17u);
  EXPECT_EQ(ScheduleSpanFor(c, 1000).epochs, 6u);
  EXPECT_EQ(c.pipeline.order.seed, 42u);
  EXPECT_EQ(c.pipeline.order.batch_size, 33u);
  EXPECT_FALSE(c.pipeline.order.drop_last);
  EXPECT_EQ(c.optimizer.lr, 0.5f);
  EXPECT_EQ(c.optimizer.momentum, 0.25f);
  EXPECT_EQ(c.optimizer.weight_decay, 0.125f);
  EXPECT_EQ(c.pipeline.order.shuffle, ShuffleMode::kWindow);
  EXPECT_EQ(c.pipeline.order.shuffle_window, 7u);
  const StreamingOptions streaming = StreamingOptionsFor(TrainLoaderOptions(c).pipeline, 1);
  EXPECT_EQ(streaming.order.batch_size, 33u);
  EXPECT_EQ(streaming.order.seed, 42u);
  EXPECT_EQ(streaming.order.shuffle_window, 7u);

  ck.order.shuffle = ShuffleMode::kNone;  // --shuffle none
  c = *parsed;
  ASSERT_TRUE(ApplyCheckpoint(ck, &c, &position).ok());
  EXPECT_EQ(c.pipeline.order.shuffle, ShuffleMode::kNone);
  EXPECT_EQ(StreamingOptionsFor(TrainLoaderOptions(c).pipeline, 1).order.shuffle,
            ShuffleMode::kNone);

  // A file from before the window was recorded: the flags' shuffle stays.
  ck.shuffle_recorded = false;
  c = *parsed;
  ASSERT_TRUE(ApplyCheckpoint(ck, &c, &position).ok());
  EXPECT_EQ(c.pipeline.order.shuffle, ShuffleMode::kWindow);
  EXPECT_EQ(c.pipeline.order.shuffle_window, 4u);

  ck.order.batch_size = 0;
  c = *parsed;
  const Status st = ApplyCheckpoint(ck, &c, &position);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_EQ(st.ToString(), "r.ckpt: checkpoint has batch size 0");
}

// A checkpoint of epoch 3 at sample 40 of each of 2 ranks, which began that epoch after 4 ranks
// had each trained 10 of theirs.
Checkpoint RanksCheckpoint() {
  Checkpoint ck;
  ck.order.batch_size = 8;
  ck.epoch = 3;
  ck.next_sample = 40;
  ck.order.world_size = 2;
  ck.order.resumed = {3, {{4, 10}}};
  return ck;
}

TEST(TrainConfig, ScheduleSpanIsTheStepsOfAnOrdinaryEpochTimesTheEpochs) {
  Result<TrainConfig> c = Parse({"--data", "d.rfd", "--batch-size", "32", "--epochs", "4"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(ScheduleSpanFor(*c, 300).steps_per_epoch, 10u);  // 9 full batches and one of 12
  EXPECT_EQ(ScheduleSpanFor(*c, 300).epochs, 4u);
  c->pipeline.order.drop_last = true;
  EXPECT_EQ(ScheduleSpanFor(*c, 300).steps_per_epoch, 9u);
}

TEST(TrainConfig, ResumeAtTheCheckpointsWorldSizeContinuesItsPosition) {
  Result<TrainConfig> parsed = Parse({"--data", "d.rfd", "--resume", "r.ckpt"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  TrainConfig c = *parsed;
  c.pipeline.order.world_size = 2;
  uint64_t position = 0;
  ASSERT_TRUE(ApplyCheckpoint(RanksCheckpoint(), &c, &position).ok());
  EXPECT_EQ(position, 40u);
  // The resume record the order continues, and the trainer records again in its checkpoints of
  // that epoch: the config's order is both.
  const ResumedEpoch& resumed = c.pipeline.order.resumed;
  EXPECT_EQ(resumed.epoch, 3u);
  ASSERT_EQ(resumed.stretches.size(), 1u);
  EXPECT_EQ(resumed.stretches[0].world_size, 4u);
  EXPECT_EQ(resumed.stretches[0].position, 10u);
  EXPECT_EQ(c.pipeline.order.world_size, 2u);  // this run's, not the checkpoint's
  EXPECT_EQ(StreamingOptionsFor(TrainLoaderOptions(c).pipeline, 1).order.resumed.stretches.size(),
            1u);
}

TEST(TrainConfig, ResumeAtAnotherWorldSizeSharesWhatTheCheckpointsRanksLeft) {
  Result<TrainConfig> parsed = Parse({"--data", "d.rfd", "--resume", "r.ckpt"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  TrainConfig c = *parsed;
  c.pipeline.order.world_size = 3;
  uint64_t position = 99;
  ASSERT_TRUE(ApplyCheckpoint(RanksCheckpoint(), &c, &position).ok());
  EXPECT_EQ(position, 0u);  // the epoch's remainder starts afresh for the 3 ranks
  const ResumedEpoch& resumed = c.pipeline.order.resumed;
  EXPECT_EQ(resumed.epoch, 3u);
  ASSERT_EQ(resumed.stretches.size(), 2u);
  EXPECT_EQ(resumed.stretches[1].world_size, 2u);
  EXPECT_EQ(resumed.stretches[1].position, 40u);

  // At an epoch's start there is nothing to share: an ordinary epoch at any world size.
  Checkpoint fresh = RanksCheckpoint();
  fresh.next_sample = 0;
  fresh.order.resumed.stretches.clear();
  c = *parsed;
  c.pipeline.order.world_size = 3;
  ASSERT_TRUE(ApplyCheckpoint(fresh, &c, &position).ok());
  EXPECT_EQ(position, 0u);
  EXPECT_TRUE(c.pipeline.order.resumed.stretches.empty());
}

// The node partition is part of the layout: the checkpoint's machines (node_ranks 1 on 2 ranks)
// continue in place under the same partition, and append their stretch, node_ranks kept, under
// another.
TEST(TrainConfig, ResumeUnderAnotherPartitionSharesWhatTheCheckpointsMachinesLeft) {
  Checkpoint ck = RanksCheckpoint();
  ck.order.node_ranks = 1;
  Result<TrainConfig> parsed =
      Parse({"--data", "d.rfd", "--resume", "r.ckpt", "--partition", "node", "--node-ranks", "1"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  TrainConfig c = *parsed;
  c.pipeline.order.world_size = 2;
  uint64_t position = 0;
  ASSERT_TRUE(ApplyCheckpoint(ck, &c, &position).ok());
  EXPECT_EQ(position, 40u);  // the same layout: the same place
  EXPECT_EQ(c.pipeline.order.resumed.stretches.size(), 1u);
  Result<TrainConfig> global = Parse({"--data", "d.rfd", "--resume", "r.ckpt"});
  ASSERT_TRUE(global.ok());
  c = *global;
  c.pipeline.order.world_size = 2;
  ASSERT_TRUE(ApplyCheckpoint(ck, &c, &position).ok());
  EXPECT_EQ(position, 0u);
  ASSERT_EQ(c.pipeline.order.resumed.stretches.size(), 2u);
  EXPECT_EQ(c.pipeline.order.resumed.stretches[1], (EpochStretch{2, 40, 1}));
}

TEST(TrainConfig, ThePartitionNodeTakesTheLaunchersRanksAndMustDivideTheWorld) {
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
  Result<TrainConfig> c = Parse({"--data", "d.rfd", "--partition", "node"});
  ::unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->pipeline.order.node_ranks, 4u);
  TrainConfig t = *c;
  t.pipeline.order.world_size = 6;
  EXPECT_EQ(t.pipeline.CheckPartition().ToString(),
            "--node-ranks 4 does not divide --world-size 6: machines run the same number of ranks "
            "under the node partition");
  t.pipeline.order.world_size = 8;
  EXPECT_TRUE(t.pipeline.CheckPartition().ok());
  EXPECT_FALSE(Parse({"--data", "d.rfd", "--node-ranks", "2"}).ok());  // without the partition
}

// The launcher's ranks on the machine are the ranks that share its cache, whose reads the cache's
// eviction weighs (StreamingOptions::machine_ranks); under the node partition its node_ranks.
TEST(TrainConfig, TheLaunchersRanksShareTheMachinesCache) {
  ::setenv("LOCAL_WORLD_SIZE", "3", 1);
  Result<TrainConfig> global = Parse({"--data", "d.rfd"});
  Result<TrainConfig> node = Parse({"--data", "d.rfd", "--partition", "node", "--node-ranks", "2"});
  ::unsetenv("LOCAL_WORLD_SIZE");
  Result<TrainConfig> alone = Parse({"--data", "d.rfd"});
  ASSERT_TRUE(global.ok() && node.ok() && alone.ok());
  EXPECT_EQ(StreamingOptionsFor(global->pipeline, 1).machine_ranks, 3u);
  EXPECT_EQ(StreamingOptionsFor(node->pipeline, 1).machine_ranks, 2u);
  EXPECT_EQ(StreamingOptionsFor(alone->pipeline, 1).machine_ranks, 1u);
}

TEST(TrainConfig, OutputsOntoInputsAreRefusedNamingBoth) {
  TempDir t;
  const std::string data = t.File("d.rfd"), test = t.File("t.rfd"), resume = t.File("r.ckpt");
  for (const std::string& f : {data, test, resume}) std::ofstream(f) << "x";
  ASSERT_EQ(::symlink(data.c_str(), t.File("link").c_str()), 0);
  TrainConfig c;
  c.resume = resume;
  auto refusal = [&](std::string TrainConfig::*field, const std::string& path) {
    TrainConfig o = c;
    o.*field = path;
    const Status st = CheckTrainOutputs(o, {data}, {test});
    if (st.ok()) return std::string();
    EXPECT_TRUE(st.IsUsage()) << st.ToString();
    return st.ToString();
  };
  EXPECT_EQ(refusal(&TrainConfig::checkpoint, data), "--checkpoint " + data + " is --data's file " +
                                                         data + "; refusing to overwrite an input");
  EXPECT_EQ(refusal(&TrainConfig::metrics, test),
            "--metrics " + test + " is --test's file " + test + "; refusing to overwrite an input");
  EXPECT_EQ(refusal(&TrainConfig::trace, t.File("link")),
            "--trace " + t.File("link") + " is --data's file " + data +
                " (the same file by another name); refusing to overwrite an input");
  EXPECT_EQ(refusal(&TrainConfig::dump_order, t.path() + "/./d.rfd"),
            "--dump-order " + t.path() + "/./d.rfd is --data's file " + data +
                " (the same file by another name); refusing to overwrite an input");
  EXPECT_EQ(
      refusal(&TrainConfig::metrics, resume),
      "--metrics " + resume + " is --resume's file " + resume + "; refusing to overwrite an input");
  // A checkpoint replacing the one it resumed from is how a run continues.
  EXPECT_EQ(refusal(&TrainConfig::checkpoint, resume), "");
  // Outputs that do not exist yet, or are other files, pass.
  EXPECT_EQ(refusal(&TrainConfig::checkpoint, t.File("new.ckpt")), "");
  EXPECT_EQ(refusal(&TrainConfig::metrics, t.File("m.jsonl")), "");
}

TEST(CommandChecks, CheckpointDirectoryMustTakeFiles) {
  TempDir t;
  EXPECT_TRUE(CheckDirectoryWritable("--checkpoint", t.File("ck")).ok());
  // The probe file is gone again.
  EXPECT_TRUE(std::filesystem::is_empty(t.path()));
  const Status st = CheckDirectoryWritable("--checkpoint", t.File("no/such/ck"));
  EXPECT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_FALSE(st.IsUsage());
  EXPECT_EQ(st.ToString(), t.File("no/such") + ": cannot create files in the directory of " +
                               "--checkpoint " + t.File("no/such/ck") +
                               ": No such file or directory (errno 2)");
}

}  // namespace
}  // namespace rf
