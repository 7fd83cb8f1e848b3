#include "pipeline/state/loader_state.h"

#include <cinttypes>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "options/option_table.h"
#include "pipeline/sources/batch_source.h"

namespace rf {
namespace {

constexpr uint64_t kU64 = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();

// The options each kind records, in state_dict()'s order.
const std::vector<std::string>& RecordedKeys(StateKind kind) {
  static const std::vector<std::string> samples = {
      "seed",       "batch_size", "shuffle",    "shuffle_window", "drop_last",  "rank",
      "world_size", "node_ranks", "augment",    "dtype",          "layout",     "normalize",
      "mean",       "std",        "image_size", "image_crop",     "image_alpha"};
  static const std::vector<std::string> sequences = {
      "seed",           "batch_size", "sequence_length", "eod_token", "pad_token",  "shuffle",
      "shuffle_window", "drop_last",  "dtype",           "rank",      "world_size", "node_ranks"};
  return kind == StateKind::kSequences ? sequences : samples;
}
// What identifies an epoch order (a state of other values would not resume exactly), and what
// else the batches depend on (from version 2 on).
const std::vector<std::string> kOrderKeys = {"seed",           "batch_size", "shuffle",
                                             "shuffle_window", "drop_last",  "dataset_id",
                                             "dataset_samples"};
const std::vector<std::string> kOutputKeys = {"augment", "dtype"};
// The look of the samples (from version 4 on; a mixture's from 2): recorded in every state,
// checked where they decide the loader's samples (LoaderState::look).
const std::vector<std::string> kLookKeys = {"layout",     "normalize",  "mean",       "std",
                                            "image_size", "image_crop", "image_alpha"};
const std::vector<std::string> kPackedKeys = {
    "seed",           "batch_size", "sequence_length", "eod_token", "pad_token", "shuffle",
    "shuffle_window", "drop_last",  "dtype",           "weights",   "datasets"};

bool Contains(const std::vector<std::string>& keys, const std::string& k) {
  for (const std::string& x : keys) {
    if (x == k) return true;
  }
  return false;
}

StateJson OptionJson(const OptionSpec& s, const OptionValue& v) {
  if (s.type == OptionType::kByteSize) return StateJson(OptionValueText(s, v));
  return std::visit([](const auto& x) { return StateJson(x); }, v);
}

std::string Hex(uint64_t id) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016" PRIx64, id);
  return text;
}

// Each stretch: its world_size and position, and its node_ranks where it ran under the node
// partition (a global stretch has none: the states of before it read the same).
StateJson StretchesJson(const std::vector<EpochStretch>& stretches) {
  StateJson out = StateJson::array();
  for (const EpochStretch& st : stretches) {
    StateJson one = {{"world_size", st.world_size}, {"position", st.position}};
    if (st.node_ranks != 0) one["node_ranks"] = st.node_ranks;
    out.push_back(std::move(one));
  }
  return out;
}

// "['a', 'b']": a list of names as Python writes it.
std::string NameList(const std::vector<std::string>& names) {
  StateJson list = StateJson::array();
  for (const std::string& n : names) list.push_back(n);
  return StateRepr(list);
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// o[k], or null where `o` is no object or has no k.
const StateJson& Get(const StateJson& o, const char* k) {
  static const StateJson none;
  if (!o.is_object()) return none;
  const auto it = o.find(k);
  return it == o.end() ? none : *it;
}

Status Malformed(const std::string& what) {
  return Status::Usage("load_state_dict: malformed state: " + what);
}

// A list of stretches (each a dict of world_size and position, and node_ranks under the node
// partition), named `name`.
Result<std::vector<EpochStretch>> ReadStretches(const StateJson& v, const std::string& name) {
  if (!v.is_array()) return Malformed(name + " must be a list, got " + StateRepr(v));
  if (v.size() > kMaxStateStretches) {
    return Malformed(std::to_string(v.size()) + " stretches, more than the " +
                     std::to_string(kMaxStateStretches) + " a state holds");
  }
  std::vector<EpochStretch> out;
  for (size_t k = 0; k < v.size(); ++k) {
    const StateJson& st = v[k];
    const std::string at = name + "[" + std::to_string(k) + "]";
    const bool node = st.is_object() && st.contains("node_ranks");
    if (!st.is_object() || st.size() != (node ? 3u : 2u) || !st.contains("world_size") ||
        !st.contains("position")) {
      return Malformed(at + " must be a dict of world_size and position (and node_ranks), got " +
                       StateRepr(st));
    }
    RF_ASSIGN_OR_RETURN(
        const uint64_t world,
        StateWholeNumber("the state's " + at + "['world_size']", st["world_size"], 1, kU32));
    RF_ASSIGN_OR_RETURN(
        const uint64_t position,
        StateWholeNumber("the state's " + at + "['position']", st["position"], 0, kU64));
    uint64_t node_ranks = 0;
    if (node) {
      RF_ASSIGN_OR_RETURN(node_ranks, StateWholeNumber("the state's " + at + "['node_ranks']",
                                                       st["node_ranks"], 1, world));
    }
    out.push_back({static_cast<uint32_t>(world), position, static_cast<uint32_t>(node_ranks)});
  }
  return out;
}

// The state's world_size and its rank within it.
Result<uint32_t> ReadWorld(const StateJson& saved) {
  RF_ASSIGN_OR_RETURN(const uint64_t world,
                      StateWholeNumber("the state's world_size", saved["world_size"], 1, kU32));
  RF_RETURN_IF_ERROR(StateWholeNumber("the state's rank", saved["rank"], 0, world - 1).status());
  return static_cast<uint32_t>(world);
}

// The state's node_ranks (0, the global partition, where it has none), at most its world_size.
Result<uint32_t> ReadNodeRanks(const StateJson& saved, uint32_t world) {
  if (!saved.contains("node_ranks")) return 0u;
  RF_ASSIGN_OR_RETURN(const uint64_t n,
                      StateWholeNumber("the state's node_ranks", saved["node_ranks"], 0, world));
  return static_cast<uint32_t>(n);
}

// A samples' or mixture's place: the epoch, the position (a batch boundary) and the stretches.
Status ReadPlace(const StateJson& saved, bool has_stretches, uint32_t batch_size, LoaderState* s) {
  RF_ASSIGN_OR_RETURN(s->epoch,
                      StateWholeNumber("the state's epoch", saved["epoch"], 0, kMaxEpoch));
  RF_ASSIGN_OR_RETURN(s->position,
                      StateWholeNumber("the state's position", saved["position"], 0, kU64));
  RF_ASSIGN_OR_RETURN(s->world_size, ReadWorld(saved));
  RF_ASSIGN_OR_RETURN(s->node_ranks, ReadNodeRanks(saved, s->world_size));
  if (has_stretches) {
    RF_ASSIGN_OR_RETURN(s->stretches, ReadStretches(saved["stretches"], "stretches"));
  }
  if (s->position % batch_size != 0) {
    return Status::Usage("load_state_dict: position " + std::to_string(s->position) +
                         " is no batch boundary (a multiple of batch_size " +
                         std::to_string(batch_size) + ")");
  }
  return Status::Ok();
}

// Each dataset's draws (a list, as its type was checked).
Result<std::vector<uint64_t>> ReadDrawn(const StateJson& drawn) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i < drawn.size(); ++i) {
    RF_ASSIGN_OR_RETURN(
        const uint64_t d,
        StateWholeNumber("the state's drawn[" + std::to_string(i) + "]", drawn[i], 0, kU64));
    out.push_back(d);
  }
  return out;
}

// A mixture's stream: the steps, each dataset's draws, and each dataset's epoch, position and
// stretches.
Result<MixtureState> ReadMixtureStream(const StateJson& saved) {
  MixtureState m;
  RF_ASSIGN_OR_RETURN(m.steps, StateWholeNumber("the state's steps", saved["steps"], 0, kU64));
  RF_ASSIGN_OR_RETURN(m.drawn, ReadDrawn(saved["drawn"]));
  const StateJson& sources = saved["sources"];
  for (size_t i = 0; i < sources.size(); ++i) {
    const StateJson& g = sources[i];
    const std::string name = "sources[" + std::to_string(i) + "]";
    if (!g.is_object() || g.size() != 3 || !g.contains("epoch") || !g.contains("position") ||
        !g.contains("stretches")) {
      return Malformed(name + " must be a dict of epoch, position and stretches, got " +
                       StateRepr(g));
    }
    MixtureSourceState x;
    RF_ASSIGN_OR_RETURN(
        x.epoch, StateWholeNumber("the state's " + name + "['epoch']", g["epoch"], 0, kMaxEpoch));
    RF_ASSIGN_OR_RETURN(x.position, StateWholeNumber("the state's " + name + "['position']",
                                                     g["position"], 0, kU64));
    RF_ASSIGN_OR_RETURN(x.stretches, ReadStretches(g["stretches"], name + "['stretches']"));
    m.sources.push_back(std::move(x));
  }
  return m;
}

// Packed sequences' stream: rows, draws, and each dataset's epoch, position, world size (0 or
// the state's) and list of [begin, end) sequences; each source's world size comes back as the
// state's.
Result<SequenceState> ReadSequenceStream(const StateJson& saved, uint32_t world) {
  SequenceState s;
  RF_ASSIGN_OR_RETURN(s.rows, StateWholeNumber("the state's rows", saved["rows"], 0, kU64));
  RF_ASSIGN_OR_RETURN(s.drawn, ReadDrawn(saved["drawn"]));
  const StateJson& sources = saved["sources"];
  for (size_t i = 0; i < sources.size(); ++i) {
    const StateJson& g = sources[i];
    const std::string index = "sources[" + std::to_string(i) + "]";
    const std::string name = "the state's " + index;
    if (!g.is_object() || g.size() != 4 || !g.contains("epoch") || !g.contains("position") ||
        !g.contains("world_size") || !g.contains("list")) {
      return Malformed(index + " must be a dict of epoch, position, world_size and list, got " +
                       StateRepr(g));
    }
    RF_ASSIGN_OR_RETURN(const uint64_t source_world,
                        StateWholeNumber(name + "['world_size']", g["world_size"], 0, kU32));
    if (source_world != 0 && source_world != world) {
      return Status::Usage("load_state_dict: " + name +
                           "['world_size'] must be the state's "
                           "world_size, " +
                           std::to_string(world) + " (or 0 for it), got " +
                           std::to_string(source_world));
    }
    const StateJson& list = g["list"];
    if (!list.is_array())
      return Malformed(index + "['list'] must be a list, got " + StateRepr(list));
    SequenceSourceState x;
    for (size_t k = 0; k < list.size(); ++k) {
      const StateJson& r = list[k];
      const std::string at = "['list'][" + std::to_string(k) + "]";
      if (!r.is_array() || r.size() != 2) {
        return Malformed(index + at + " must be a [begin, end] pair of sequences, got " +
                         StateRepr(r));
      }
      RF_ASSIGN_OR_RETURN(const uint64_t b, StateWholeNumber(name + at + "[0]", r[0], 0, kU64));
      RF_ASSIGN_OR_RETURN(const uint64_t e, StateWholeNumber(name + at + "[1]", r[1], 0, kU64));
      x.list.push_back({b, e});
    }
    RF_ASSIGN_OR_RETURN(x.epoch, StateWholeNumber(name + "['epoch']", g["epoch"], 0, kMaxEpoch));
    RF_ASSIGN_OR_RETURN(x.position,
                        StateWholeNumber(name + "['position']", g["position"], 0, kU64));
    x.world_size = world;
    s.sources.push_back(std::move(x));
  }
  return s;
}

// What a state that is no object, or of another kind, is refused with.
Status NotOfKind(const StateJson& saved, StateKind own) {
  const std::string what = saved.is_object() ? "kind " + StateRepr(Get(saved, "kind"))
                                             : std::string(StateTypeName(saved));
  switch (own) {
    case StateKind::kMixture:
      return Status::Usage(
          "load_state_dict: not a mixture's state (from a Loader of several "
          "datasets with weights): " +
          what);
    case StateKind::kSequences:
      return Status::Usage(
          "load_state_dict: not a packed sequences state (from a Loader with "
          "sequence_length): " +
          what);
    case StateKind::kSamples:
      break;
  }
  if (!saved.is_object()) {
    return Status::Usage("load_state_dict takes a dict from state_dict(), got " + what);
  }
  if (Get(saved, "kind") == "mixture") {
    const StateJson& d = Get(saved, "datasets");
    return Status::Usage("load_state_dict: the state is a mixture's of " +
                         std::to_string(d.is_array() ? d.size() : 0) +
                         " datasets (weights); this loader reads one dataset");
  }
  return Status::Usage(
      "load_state_dict: the state is of packed sequences (from a Loader with "
      "sequence_length); this loader reads samples");
}

const char* KindWord(StateKind k) {
  switch (k) {
    case StateKind::kMixture:
      return "mixture";
    case StateKind::kSequences:
      return "sequences";
    case StateKind::kSamples:
      break;
  }
  return "";
}

uint32_t NewestVersion(StateKind k) {
  switch (k) {
    case StateKind::kMixture:
      return kMixtureStateVersion;
    case StateKind::kSequences:
      return kSequenceStateVersion;
    case StateKind::kSamples:
      break;
  }
  return kSampleStateVersion;
}

// The version of `saved`, one of its kind's; else the refusal naming the versions read.
Result<uint32_t> ReadVersion(const StateJson& saved, StateKind kind) {
  const StateJson& v = Get(saved, "version");
  const uint32_t newest = NewestVersion(kind);
  if ((v.is_number_unsigned() || v.is_number_integer()) && v.get<int64_t>() >= 1 &&
      v.get<int64_t>() <= newest) {
    return static_cast<uint32_t>(v.get<int64_t>());
  }
  const char* what = kind == StateKind::kMixture     ? "mixture state"
                     : kind == StateKind::kSequences ? "packed state"
                                                     : "state";
  const std::string reads = newest == 1 ? std::string("1") : "1 to " + std::to_string(newest);
  return Status::Usage(std::string("load_state_dict: unknown ") + what + " version " +
                       StateRepr(v) + " (this ringfeed reads " + reads + ")");
}

// The fields a state of `version` holds: own's encoding's, less what that version lacks.
std::vector<std::string> FieldsOf(const StateJson& own, StateKind kind, uint32_t version) {
  std::vector<std::string> out;
  for (const auto& [key, value] : own.items()) {
    if (key == "version" || key == "kind") continue;
    if (kind == StateKind::kSamples) {
      if (version < 2 && Contains(kOutputKeys, key)) continue;
      if (version < 3 && key == "stretches") continue;
      if (version < 5 && key == "node_ranks") continue;
      if (version < 6 && key == "image_alpha") continue;
    }
    if (kind == StateKind::kMixture && version < 3 && key == "node_ranks") continue;
    if (kind == StateKind::kMixture && version < 4 && key == "image_alpha") continue;
    if (kind == StateKind::kSequences && version < 2 && key == "node_ranks") continue;
    const uint32_t look_from = kind == StateKind::kSamples ? 4 : 2;
    if (kind != StateKind::kSequences && version < look_from && Contains(kLookKeys, key)) continue;
    out.push_back(key);
  }
  return out;
}

// The datasets of a mixture state against own's: each id and samples (the path named).
std::vector<std::string> DatasetsDiffer(const StateJson& saved, const StateJson& own) {
  if (!saved.is_array() || saved.size() != own.size()) {
    return {"datasets: the state has " +
            (saved.is_array() ? std::to_string(saved.size()) : StateRepr(saved)) +
            ", this loader " + std::to_string(own.size())};
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < saved.size(); ++i) {
    const StateJson& a = saved[i];
    const StateJson& b = own[i];
    const auto field = [&a](const char* k) { return Get(a, k); };
    if (a.is_object() && field("id") == b["id"] && field("samples") == b["samples"]) continue;
    // As Python's str() writes each (a str unquoted).
    const auto text = [](const StateJson& v) {
      return v.is_string() ? v.get<std::string>() : StateRepr(v);
    };
    const std::string shown = a.is_object()
                                  ? "id " + text(field("id")) + " (" + text(field("path")) + ", " +
                                        text(field("samples")) + " samples)"
                                  : StateRepr(a);
    out.push_back("datasets[" + std::to_string(i) + "]: the state has " + shown +
                  ", this loader id " + text(b["id"]) + " (" + text(b["path"]) + ", " +
                  text(b["samples"]) + " samples)");
  }
  return out;
}

}  // namespace

StateJson RecordedOptions(const LoaderOptions& o, StateKind kind) {
  const OptionTable<LoaderOptions>& table = LoaderOptionTable();
  StateJson out = StateJson::object();
  for (const std::string& key : RecordedKeys(kind)) {
    for (const auto& e : table.entries()) {
      if ((e.spec.users & kLoaderApi) == 0 || OptionName(e.spec, OptionFace::kPython) != key)
        continue;
      out[key] = OptionJson(e.spec, e.get(o));
      break;
    }
  }
  return out;
}

StateJson EncodeLoaderState(const LoaderState& s) {
  StateJson out = StateJson::object();
  out["version"] = s.version != 0 ? s.version : NewestVersion(s.kind);
  if (s.kind != StateKind::kSamples) out["kind"] = KindWord(s.kind);
  if (s.kind != StateKind::kSequences) {
    out["epoch"] = s.epoch;
    out["position"] = s.position;
    out["stretches"] = StretchesJson(s.stretches);
  }
  for (const auto& [key, value] : s.options.items()) out[key] = value;
  switch (s.kind) {
    case StateKind::kSamples:
      out["dataset_id"] = Hex(s.datasets.at(0).id);
      out["dataset_samples"] = s.datasets.at(0).samples;
      break;
    case StateKind::kMixture: {
      out["weights"] = s.weights;
      StateJson datasets = StateJson::array();
      for (const StateDataset& d : s.datasets)
        datasets.push_back({{"id", Hex(d.id)}, {"samples", d.samples}, {"path", d.path}});
      out["datasets"] = datasets;
      out["steps"] = s.mixture.steps;
      out["drawn"] = s.mixture.drawn;
      StateJson sources = StateJson::array();
      for (const MixtureSourceState& g : s.mixture.sources) {
        sources.push_back({{"epoch", g.epoch},
                           {"position", g.position},
                           {"stretches", StretchesJson(g.stretches)}});
      }
      out["sources"] = sources;
      break;
    }
    case StateKind::kSequences: {
      out["weights"] = s.weights;
      StateJson datasets = StateJson::array();
      for (const StateDataset& d : s.datasets)
        datasets.push_back({{"id", Hex(d.id)}, {"samples", d.samples}});
      out["datasets"] = datasets;
      out["rows"] = s.sequences.rows;
      out["drawn"] = s.sequences.drawn;
      StateJson sources = StateJson::array();
      for (const SequenceSourceState& g : s.sequences.sources) {
        StateJson list = StateJson::array();
        for (const SequenceRange& r : g.list) list.push_back({r.begin, r.end});
        sources.push_back({{"epoch", g.epoch},
                           {"position", g.position},
                           {"world_size", g.world_size},
                           {"list", list}});
      }
      out["sources"] = sources;
      break;
    }
  }
  return out;
}

Status CheckCompatible(const StateJson& saved, uint32_t version, const LoaderState& own) {
  const StateJson mine = EncodeLoaderState(own);
  std::vector<std::string> keys;
  switch (own.kind) {
    case StateKind::kSamples:
      keys = kOrderKeys;
      if (version >= 2) keys.insert(keys.end(), kOutputKeys.begin(), kOutputKeys.end());
      if (version >= 4) keys.insert(keys.end(), own.look.begin(), own.look.end());
      break;
    case StateKind::kMixture:
      keys = {"seed",      "batch_size", "shuffle", "shuffle_window",
              "drop_last", "augment",    "dtype",   "weights"};
      if (version >= 2) keys.insert(keys.end(), own.look.begin(), own.look.end());
      break;
    case StateKind::kSequences:
      keys = kPackedKeys;
      break;
  }
  // Only what the state's version holds (a version 5 state has no image_alpha to compare).
  const std::vector<std::string> held = FieldsOf(mine, own.kind, version);
  std::vector<std::string> differ;
  for (const std::string& k : keys) {
    if (!Contains(held, k)) continue;
    if (Get(saved, k.c_str()) != Get(mine, k.c_str())) {
      differ.push_back(k + ": the state has " + StateRepr(Get(saved, k.c_str())) +
                       ", this loader " + StateRepr(Get(mine, k.c_str())));
    }
  }
  if (own.kind == StateKind::kMixture) {
    const std::vector<std::string> d =
        DatasetsDiffer(Get(saved, "datasets"), Get(mine, "datasets"));
    differ.insert(differ.end(), d.begin(), d.end());
  }
  if (differ.empty()) return Status::Ok();
  const char* other = own.kind == StateKind::kMixture ? "of another mixture" : "of other batches";
  return Status::Usage(std::string("load_state_dict: the state is ") + other + ": " +
                       Joined(differ));
}

Result<LoaderState> DecodeLoaderState(const StateJson& saved, const LoaderState& own) {
  RF_RETURN_IF_ERROR(StateDepthStatus(saved));
  const bool kind_matches = saved.is_object() && [&] {
    const StateJson& kind = Get(saved, "kind");
    if (own.kind == StateKind::kSamples)
      return kind.is_null() || (kind != "mixture" && kind != "sequences");
    return kind == KindWord(own.kind);
  }();
  if (!kind_matches) return NotOfKind(saved, own.kind);
  LoaderState s;
  s.kind = own.kind;
  RF_ASSIGN_OR_RETURN(s.version, ReadVersion(saved, own.kind));

  // Every field of the version there, each of own's type; then what the batches depend on.
  const StateJson mine = EncodeLoaderState(own);
  const std::vector<std::string> fields = FieldsOf(mine, own.kind, s.version);
  std::vector<std::string> missing, wrong;
  for (const std::string& k : fields) {
    if (!saved.contains(k)) missing.push_back(k);
  }
  if (!missing.empty())
    return Status::Usage("load_state_dict: the state lacks " + NameList(missing));
  for (const std::string& k : fields) {
    if (!SameStateType(saved[k], mine[k])) {
      wrong.push_back(k + " is " + StateTypeName(saved[k]) + " " + StateRepr(saved[k]) + ", not " +
                      StateTypeName(mine[k]));
    }
  }
  if (!wrong.empty()) return Malformed(Joined(wrong));
  RF_RETURN_IF_ERROR(CheckCompatible(saved, s.version, own));

  for (const std::string& k : RecordedKeys(own.kind)) {
    if (saved.contains(k)) s.options[k] = saved[k];
  }
  s.datasets = own.datasets;
  s.weights = own.weights;
  const uint32_t batch_size = mine["batch_size"].get<uint32_t>();
  switch (own.kind) {
    case StateKind::kSamples:
      RF_RETURN_IF_ERROR(ReadPlace(saved, s.version >= 3, batch_size, &s));
      break;
    case StateKind::kMixture: {
      RF_RETURN_IF_ERROR(ReadPlace(saved, true, batch_size, &s));
      RF_ASSIGN_OR_RETURN(s.mixture, ReadMixtureStream(saved));
      break;
    }
    case StateKind::kSequences: {
      RF_ASSIGN_OR_RETURN(s.world_size, ReadWorld(saved));
      RF_ASSIGN_OR_RETURN(s.node_ranks, ReadNodeRanks(saved, s.world_size));
      RF_ASSIGN_OR_RETURN(s.sequences, ReadSequenceStream(saved, s.world_size));
      s.sequences.node_ranks = s.node_ranks;
      break;
    }
  }
  return s;
}

}  // namespace rf
