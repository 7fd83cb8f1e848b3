// LoaderState (pipeline/state/loader_state.h): its encoding, the states of every version that
// load (samples 1-4, mixture 1-2, packed 1), and each refusal of a saved state, named as the
// Python caller wrote it.
#include "pipeline/state/loader_state.h"

#include <gtest/gtest.h>

#include <string>

#include "pipeline/sources/batch_source.h"

namespace rf {
namespace {

LoaderOptions Options() {
  LoaderOptions o;
  o.pipeline.order.batch_size = 16;
  o.pipeline.order.seed = 7;
  o.pipeline.order.world_size = 2;
  return o;
}

LoaderState Samples() {
  LoaderState s;
  s.options = RecordedOptions(Options(), StateKind::kSamples);
  s.look = {"layout", "normalize", "mean", "std"};
  s.datasets = {{0xabc, 100, "a.rfd"}};
  s.world_size = 2;
  s.epoch = 3;
  s.position = 32;
  s.stretches = {{4, 16}};
  return s;
}

LoaderState Mixture() {
  LoaderState s = Samples();
  s.kind = StateKind::kMixture;
  s.version = kMixtureStateVersion;
  s.datasets = {{0xabc, 100, "a.rfd"}, {0x300, 50, "b.rfd"}};
  s.weights = {0.75, 0.25};
  s.mixture.steps = 48;
  s.mixture.drawn = {36, 12};
  s.mixture.sources = {{1, 8, {}}, {0, 6, {{3, 2}}}};
  return s;
}

LoaderState Packed() {
  LoaderOptions o = Options();
  o.sequence.length = 32;
  LoaderState s;
  s.kind = StateKind::kSequences;
  s.version = kSequenceStateVersion;
  s.options = RecordedOptions(o, StateKind::kSequences);
  s.datasets = {{0xabc, 100, ""}};
  s.world_size = 2;
  s.sequences.rows = 64;
  s.sequences.drawn = {64};
  s.sequences.sources = {{2, 16, 2, {{0, 10}, {20, 30}}}};
  return s;
}

// The refusal of `saved` by a loader whose own state is `own` ("" where it loads).
std::string Refusal(const StateJson& saved, const LoaderState& own) {
  Result<LoaderState> r = DecodeLoaderState(saved, own);
  return r.ok() ? std::string() : r.status().message();
}

TEST(StateJsonTest, ValuesAreNamedAsPythonWritesThem) {
  EXPECT_EQ(StateRepr(StateJson(true)), "True");
  EXPECT_EQ(StateRepr(StateJson()), "None");
  EXPECT_EQ(StateRepr(StateJson(1.0)), "1.0");
  EXPECT_EQ(StateRepr(StateJson("it's")), "\"it's\"");
  EXPECT_EQ(StateRepr(StateJson::parse(R"([1, -2, 2.5, "a", {"k": [true]}])")),
            "[1, -2, 2.5, 'a', {'k': [True]}]");
  EXPECT_STREQ(StateTypeName(StateJson(uint64_t{5})), "int");
  EXPECT_TRUE(SameStateType(StateJson(int64_t{-1}), StateJson(uint64_t{5})));
  EXPECT_FALSE(SameStateType(StateJson(1.0), StateJson(1)));
  EXPECT_EQ(StateWholeNumber("n", StateJson(-1), 0, 9).status().message(),
            "n must be a whole number from 0 to 9, got -1");
  EXPECT_FALSE(StateWholeNumber("n", StateJson(true), 0, 9).ok());
}

TEST(LoaderStateTest, EveryKindReadsBackWhatItWrote) {
  for (const LoaderState& own : {Samples(), Mixture(), Packed()}) {
    const StateJson saved = EncodeLoaderState(own);
    Result<LoaderState> r = DecodeLoaderState(saved, own);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->kind, own.kind);
    EXPECT_EQ(r->epoch, own.epoch);
    EXPECT_EQ(r->position, own.position);
    EXPECT_EQ(r->stretches, own.stretches);
    EXPECT_EQ(r->mixture, own.mixture);
    EXPECT_EQ(r->sequences, own.sequences);
    EXPECT_EQ(r->world_size, 2u);
    EXPECT_EQ(EncodeLoaderState(*r), saved);
  }
  const StateJson s = EncodeLoaderState(Samples());
  EXPECT_EQ(s["dataset_id"], "0000000000000abc");
  EXPECT_EQ(s["seed"], 7);
  EXPECT_FALSE(s.contains("kind"));
  EXPECT_EQ(EncodeLoaderState(Mixture())["kind"], "mixture");
}

TEST(LoaderStateTest, OlderVersionsLoadWithWhatTheyLackUnchecked) {
  LoaderState own = Samples();
  own.look.push_back("image_alpha");  // as a loader of image records has it
  StateJson v5 = EncodeLoaderState(own);
  ASSERT_TRUE(v5.contains("image_alpha"));
  StateJson other = v5;
  other["image_alpha"] = "keep";
  EXPECT_NE(Refusal(other, own).find("image_alpha: the state has 'keep', this loader 'drop'"),
            std::string::npos)
      << Refusal(other, own);
  v5.erase("image_alpha");  // before the alpha was kept: not compared
  v5["version"] = 5;
  EXPECT_EQ(Refusal(v5, own), "");
  Result<LoaderState> r5 = DecodeLoaderState(v5, own);
  ASSERT_TRUE(r5.ok()) << r5.status().ToString();
  EXPECT_FALSE(EncodeLoaderState(*r5).contains("image_alpha"));
  StateJson v4 = v5;
  v4.erase("node_ranks");  // before the node partition: the global one
  v4["version"] = 4;
  Result<LoaderState> r4 = DecodeLoaderState(v4, own);
  ASSERT_TRUE(r4.ok()) << r4.status().ToString();
  EXPECT_EQ(r4->node_ranks, 0u);
  StateJson v3 = v4;
  for (const char* k : {"layout", "normalize", "mean", "std", "image_size", "image_crop"})
    v3.erase(k);  // (image_alpha: erased above)
  v3["version"] = 3;
  EXPECT_EQ(Refusal(v3, own), "");
  // A state read at an older version encodes again at that version, and is taken again (the
  // state fuzzer's rule: found by it, a version 3 state without `layout`).
  Result<LoaderState> r3 = DecodeLoaderState(v3, own);
  ASSERT_TRUE(r3.ok()) << r3.status().ToString();
  EXPECT_EQ(EncodeLoaderState(*r3)["version"], 3);
  EXPECT_EQ(Refusal(EncodeLoaderState(*r3), own), "");
  StateJson v2 = v3;
  v2.erase("stretches");
  v2["version"] = 2;
  Result<LoaderState> r = DecodeLoaderState(v2, own);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->stretches.empty());  // an ordinary epoch
  StateJson v1 = v2;
  v1.erase("augment");
  v1["dtype"] = "float16";  // not recorded in version 1: not compared
  v1.erase("dtype");
  v1["version"] = 1;
  EXPECT_EQ(Refusal(v1, own), "");
  v1["version"] = 7;
  EXPECT_EQ(Refusal(v1, own),
            "load_state_dict: unknown state version 7 (this ringfeed reads 1 to 6)");

  // A mixture's version 1: without the look of the samples, which is then not compared.
  const LoaderState mix = Mixture();
  StateJson m1 = EncodeLoaderState(mix);
  m1["version"] = 1;
  for (const char* k :
       {"layout", "normalize", "mean", "std", "image_size", "image_crop", "image_alpha"})
    m1.erase(k);
  EXPECT_EQ(Refusal(m1, mix), "");
  // A packed state's version 1: without node_ranks, the global partition.
  StateJson p = EncodeLoaderState(Packed());
  p.erase("node_ranks");
  p["version"] = 1;
  Result<LoaderState> p1 = DecodeLoaderState(p, Packed());
  ASSERT_TRUE(p1.ok()) << p1.status().ToString();
  EXPECT_EQ(p1->sequences.node_ranks, 0u);
  p["version"] = 3;
  EXPECT_EQ(Refusal(p, Packed()),
            "load_state_dict: unknown packed state version 3 (this ringfeed reads 1 to 2)");
  StateJson p2 = EncodeLoaderState(Packed());
  p2["node_ranks"] = 1;  // the partition the lists were numbered under reaches the loader
  Result<LoaderState> r2 = DecodeLoaderState(p2, Packed());
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(r2->sequences.node_ranks, 1u);
  p2["node_ranks"] = 3;  // more than its world_size, 2
  EXPECT_NE(Refusal(p2, Packed()).find("node_ranks"), std::string::npos) << Refusal(p2, Packed());
}

TEST(LoaderStateTest, AStateOfAnotherKindIsRefusedNamingIt) {
  EXPECT_EQ(Refusal(StateJson::array(), Samples()),
            "load_state_dict takes a dict from state_dict(), got list");
  EXPECT_EQ(Refusal(EncodeLoaderState(Mixture()), Samples()),
            "load_state_dict: the state is a mixture's of 2 datasets (weights); this loader "
            "reads one dataset");
  EXPECT_EQ(Refusal(EncodeLoaderState(Samples()), Mixture()),
            "load_state_dict: not a mixture's state (from a Loader of several datasets with "
            "weights): kind None");
  EXPECT_EQ(Refusal(EncodeLoaderState(Mixture()), Packed()),
            "load_state_dict: not a packed sequences state (from a Loader with "
            "sequence_length): kind 'mixture'");
}

TEST(LoaderStateTest, EachFieldThatIsWrongIsNamed) {
  const LoaderState own = Samples();
  const StateJson good = EncodeLoaderState(own);
  StateJson s = good;
  s.erase("position");
  s.erase("seed");
  EXPECT_EQ(Refusal(s, own), "load_state_dict: the state lacks ['position', 'seed']");
  s = good;
  s["batch_size"] = 16.0;
  s["drop_last"] = 0;
  EXPECT_EQ(Refusal(s, own),
            "load_state_dict: malformed state: batch_size is float 16.0, not int; drop_last is "
            "int 0, not bool");
  s = good;
  s["seed"] = 5;
  s["dataset_samples"] = 99;
  EXPECT_EQ(Refusal(s, own),
            "load_state_dict: the state is of other batches: seed: the state has 5, this loader "
            "7; dataset_samples: the state has 99, this loader 100");
  s = good;
  s["position"] = 33;
  EXPECT_EQ(Refusal(s, own),
            "load_state_dict: position 33 is no batch boundary (a multiple of batch_size 16)");
  s = good;
  s["epoch"] = kMaxEpoch + 1;
  EXPECT_EQ(Refusal(s, own),
            "the state's epoch must be a whole number from 0 to 4294967295, got 4294967296");
  s = good;
  s["rank"] = 2;
  EXPECT_EQ(Refusal(s, own), "the state's rank must be a whole number from 0 to 1, got 2");
  s = good;
  s["stretches"] = StateJson::parse(R"([[2, 80]])");
  EXPECT_EQ(Refusal(s, own),
            "load_state_dict: malformed state: stretches[0] must be a dict of world_size and "
            "position (and node_ranks), got [2, 80]");
  s["stretches"] = StateJson::array();
  for (int i = 0; i < 1025; ++i) s["stretches"].push_back({{"world_size", 1}, {"position", 0}});
  EXPECT_EQ(Refusal(s, own),
            "load_state_dict: malformed state: 1025 stretches, more than the 1024 a state holds");
}

// A state nested deeper than any the loader writes is refused before anything walks it.
TEST(LoaderStateTest, ValuesNestedTooDeepAreRefusedWithoutRecursion) {
  StateJson deep = StateJson::array();
  for (int i = 0; i < 100000; ++i) deep = StateJson::array({std::move(deep)});
  StateJson s = EncodeLoaderState(Samples());
  s["stretches"] = std::move(deep);
  EXPECT_EQ(Refusal(s, Samples()),
            "load_state_dict: malformed state: values nested more than 32 deep");
  StateJson ok = StateJson::array();
  for (size_t i = 1; i < kMaxStateDepth - 1; ++i) ok = StateJson::array({std::move(ok)});
  EXPECT_TRUE(StateDepthStatus(StateJson::object({{"a", ok}})).ok());
}

TEST(LoaderStateTest, AMixturesDatasetsAndStreamAreChecked) {
  const LoaderState own = Mixture();
  const StateJson good = EncodeLoaderState(own);
  StateJson s = good;
  s["datasets"][1]["id"] = "0000000000000301";
  s["datasets"][0]["path"] = "moved.rfd";  // named, never compared
  EXPECT_EQ(Refusal(s, own),
            "load_state_dict: the state is of another mixture: datasets[1]: the state has id "
            "0000000000000301 (b.rfd, 50 samples), this loader id 0000000000000300 (b.rfd, 50 "
            "samples)");
  s = good;
  s["sources"][0] = StateJson::parse(R"({"epoch": 1, "position": 8})");
  EXPECT_EQ(Refusal(s, own),
            "load_state_dict: malformed state: sources[0] must be a dict of epoch, position and "
            "stretches, got {'epoch': 1, 'position': 8}");
  s = good;
  s["sources"][1]["stretches"][0]["world_size"] = 0;
  EXPECT_EQ(Refusal(s, own),
            "the state's sources[1]['stretches'][0]['world_size'] must be a whole number from 1 "
            "to 4294967295, got 0");
}

TEST(LoaderStateTest, PackedSequencesListsAreChecked) {
  const LoaderState own = Packed();
  const StateJson good = EncodeLoaderState(own);
  StateJson s = good;
  s["sources"][0]["list"][1] = StateJson::parse("[20]");
  EXPECT_EQ(Refusal(s, own),
            "load_state_dict: malformed state: sources[0]['list'][1] must be a [begin, end] pair "
            "of sequences, got [20]");
  s = good;
  s["sources"][0]["world_size"] = 3;
  EXPECT_EQ(Refusal(s, own),
            "load_state_dict: the state's sources[0]['world_size'] must be the state's "
            "world_size, 2 (or 0 for it), got 3");
  s = good;
  s["sequence_length"] = 64;
  EXPECT_EQ(Refusal(s, own),
            "load_state_dict: the state is of other batches: sequence_length: the state has 64, "
            "this loader 32");
  s = good;
  s["sources"][0]["world_size"] = 0;  // the state's own world
  Result<LoaderState> r = DecodeLoaderState(s, own);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->sequences.sources[0].world_size, 2u);
}

}  // namespace
}  // namespace rf
