// A loader's saved state on arbitrary JSON (pipeline/state/loader_state.h's DecodeLoaderState):
// what ringfeed.Loader.load_state_dict hands the library, value for value, from a checkpoint a
// user keeps, as a state of each kind (one dataset's samples, a mixture's, packed sequences').
// Contract checks: a refusal is one short line naming load_state_dict or the state's field; a
// state taken encodes again (EncodeLoaderState) into one that is taken to the same place.
//
// Input: [a byte: which loader's own state][the JSON text]. Text that is no JSON is left out (the
// binding never hands such); nlohmann-json parses without recursion.
#include <cstdint>
#include <string>

#include "pipeline/state/loader_state.h"
#include "tools/fuzz/fuzz_common.h"

using namespace rf;

namespace {

LoaderState Own(uint8_t choice) {
  LoaderOptions o;
  o.pipeline.order.batch_size = 4;
  o.pipeline.order.world_size = 2;
  o.sequence.length = 8;
  LoaderState s;
  s.kind = static_cast<StateKind>(choice % 3);
  s.options = RecordedOptions(o, s.kind);
  s.datasets = {{0x1234, 40, "a.rfd"}};
  s.world_size = 2;
  if (s.kind == StateKind::kSamples) s.look = {"layout", "normalize", "mean", "std"};
  if (s.kind == StateKind::kMixture) {
    s.version = kMixtureStateVersion;
    s.datasets.push_back({0x99, 8, "b.rfd"});
    s.weights = {0.5, 0.5};
  }
  if (s.kind == StateKind::kSequences) s.version = kSequenceStateVersion;
  return s;
}

bool OneLine(const std::string& why) {
  return !why.empty() && why.size() < 4096 && why.find('\n') == std::string::npos &&
         (why.rfind("load_state_dict", 0) == 0 || why.rfind("the state's ", 0) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const LoaderState own = Own(data[0]);
  const StateJson saved = StateJson::parse(data + 1, data + size, nullptr, /*allow_exceptions=*/false);
  if (saved.is_discarded()) return 0;
  Result<LoaderState> r = DecodeLoaderState(saved, own);
  if (!r.ok()) {
    RF_FUZZ_CHECK(OneLine(r.status().message()));
    return 0;
  }
  // What was taken is a place a loader of `own` stands at: it encodes and is taken again there.
  Result<LoaderState> again = DecodeLoaderState(EncodeLoaderState(*r), own);
  RF_FUZZ_CHECK(again.ok());
  RF_FUZZ_CHECK(again->epoch == r->epoch && again->position == r->position &&
                again->stretches == r->stretches && again->mixture == r->mixture &&
                again->sequences == r->sequences);
  return 0;
}
