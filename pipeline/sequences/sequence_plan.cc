#include "pipeline/sequences/sequence_plan.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "pipeline/order/epoch_order.h"

namespace rf {
namespace {

// The second of the three seed words of the machines' parts (the header's P): no epoch's or
// window's key has three words, and the records' node partition has a word of its own.
constexpr uint64_t kSequencePartWord = 0x7365712d70617274ull;  // "seq-part"

// Appends [b, e) to *out, merged with the last range where they meet.
void AppendRange(uint64_t b, uint64_t e, SequenceList* out) {
  if (b >= e) return;
  if (!out->empty() && out->back().end == b) {
    out->back().end = e;
  } else {
    out->push_back({b, e});
  }
}

// Entry `i` of the list's N entries, as a global sequence, walking from range `*at` on
// (the entries asked for ascend, so the walk is linear).
struct ListWalk {
  const SequenceList& list;
  size_t at = 0;
  uint64_t before = 0;  // entries in ranges before `at`
  // Appends the list's entries [from, to) to *out as global ranges.
  void Append(uint64_t from, uint64_t to, SequenceList* out) {
    while (from < to && at < list.size()) {
      const SequenceRange& r = list[at];
      if (from >= before + r.size()) {
        before += r.size();
        ++at;
        continue;
      }
      const uint64_t b = r.begin + (from - before);
      const uint64_t e = r.begin + std::min(to - before, r.size());
      AppendRange(b, e, out);
      from += e - b;
    }
  }
};

// floor(n r / w) without overflow (r <= w).
uint64_t Share(uint64_t n, uint64_t r, uint64_t w) { return n / w * r + n % w * r / w; }

}  // namespace

uint64_t SequenceCount(const SequenceList& list) {
  uint64_t n = 0;
  for (const SequenceRange& r : list) n += r.size();
  return n;
}

RankSequences SliceSequences(const SequenceList& list, uint32_t world, uint32_t rank) {
  world = std::max<uint32_t>(world, 1);
  const uint64_t n = SequenceCount(list);
  const uint64_t first = Share(n, rank, world), last = Share(n, rank + 1, world);
  RankSequences out;
  out.count = last - first;
  out.rows = n / world + (n % world != 0 ? 1 : 0);
  ListWalk walk{list};
  walk.Append(first, last, &out.ranges);
  return out;
}

SequenceList RemainingSequences(const SequenceList& list, uint32_t world, uint64_t rows) {
  world = std::max<uint32_t>(world, 1);
  const uint64_t n = SequenceCount(list);
  SequenceList out;
  ListWalk walk{list};
  for (uint32_t r = 0; r < world; ++r) {
    const uint64_t first = Share(n, r, world), last = Share(n, r + 1, world);
    walk.Append(first + std::min(rows, last - first), last, &out);
  }
  return out;
}

uint32_t SequencePlan::Machines(uint32_t world, uint32_t node_ranks) {
  world = std::max<uint32_t>(world, 1);
  return node_ranks >= 1 && world % node_ranks == 0 && world / node_ranks >= 2 ? world / node_ranks
                                                                               : 1;
}

Result<std::shared_ptr<const SequencePlan>> SequencePlan::Make(const Dataset& d,
                                                               const OrderSettings& order,
                                                               uint32_t sequence_length, bool eod,
                                                               bool drop_last, bool pad) {
  const format::Header& h = d.header();
  if (IsImageDType(h.sample_dtype) ||
      (h.variable() && h.record_kind != format::RecordKind::kTokens))
    return Status::Usage(
        "sequence_length: packed sequences are made of token ids (a tokens dataset, or fixed "
        "rows of uint16, int32 or int64 ids); " +
        d.shard_path(0) + " holds " + format::RecordKindName(h.record_kind) + " of " +
        std::string(DTypeName(h.sample_dtype)));
  if (sequence_length == 0) return Status::Usage("sequence_length must be at least 1");
  const size_t chunks = d.chunk_count();
  std::vector<uint64_t> tokens(chunks);
  const uint64_t elem = DTypeSize(h.sample_dtype);
  for (size_t g = 0; g < chunks; ++g) {
    const ChunkLocation& c = d.chunk(g);
    if (c.entry.record_bytes == 0) {
      // The version of the dataset holding the chunk: a directory's part's own (the directory's
      // header holds its newest part's).
      uint32_t version = h.version;
      for (size_t p = 0; p < d.part_count(); ++p) {
        const DatasetPart& part = d.part(p);
        if (g >= part.first_chunk && g < part.first_chunk + part.chunk_count)
          version = part.header.version;
      }
      return Status::Usage("sequence_length: " + d.shard_path(c.shard) + ": chunk " +
                           std::to_string(c.entry.index) +
                           ": the chunk index does not say how many tokens the chunk holds "
                           "(format version " +
                           std::to_string(version) + "); rewrite " +
                           (d.part_count() > 1 ? "the part" : "the dataset") +
                           " with `ringfeed-convert recompress` (version 3)");
    }
    tokens[g] = c.entry.record_bytes / elem + (eod ? c.entry.sample_count : 0);
  }
  // The machines' parts (the header's P), their tokens and documents; this rank's part.
  const uint32_t machines = Machines(order.world_size, order.node_ranks);
  if (machines > chunks)
    return Status::Usage("partition node: " + d.shard_path(0) + " holds " + std::to_string(chunks) +
                         " chunks, fewer than the " + std::to_string(machines) +
                         " machines, each of which reads a part of its own; leave partition "
                         "global");
  std::vector<uint32_t> samples = d.ChunkSampleCounts();  // moved into the plan's order
  std::vector<uint64_t> machine_tokens(machines, 0), machine_docs(machines, 0);
  uint32_t machine = 0;
  OrderSettings one = order;
  one.rank = 0;
  one.world_size = 1;
  one.node_ranks = 0;
  one.resumed = {};
  std::shared_ptr<std::vector<uint64_t>> part;
  if (machines > 1) {
    machine = std::min(order.rank, order.world_size - 1) / order.node_ranks;
    std::vector<uint64_t> perm(chunks);
    if (order.shuffle == ShuffleMode::kWindow) {
      perm = SeededPermutation(chunks, {order.seed, kSequencePartWord, 0});
    } else {
      std::iota(perm.begin(), perm.end(), uint64_t{0});
    }
    part = std::make_shared<std::vector<uint64_t>>();
    for (size_t i = 0; i < chunks; ++i) {
      const uint32_t k = static_cast<uint32_t>(i % machines);
      machine_tokens[k] += tokens[perm[i]];
      machine_docs[k] += samples[perm[i]];
      if (k == machine) part->push_back(perm[i]);
    }
    std::sort(part->begin(), part->end());
  } else {
    machine_tokens[0] = std::accumulate(tokens.begin(), tokens.end(), uint64_t{0});
    machine_docs[0] = d.sample_count();
  }
  std::shared_ptr<SequencePlan> p(new SequencePlan(std::move(samples), one, part));
  p->part_ = std::move(part);
  p->length_ = sequence_length;
  p->pad_ = pad;
  p->chunk_tokens_ = std::move(tokens);
  p->machine_ = machine;
  p->tokens_ = machine_tokens[machine];
  const uint64_t row = p->row_tokens();
  p->first_.assign(1, 0);
  for (uint32_t k = 0; k < machines; ++k) {
    const uint64_t t = machine_tokens[k];
    const uint64_t n = pad ? machine_docs[k] : t / row + (!drop_last && t % row != 0 ? 1 : 0);
    p->first_.push_back(p->first_.back() + n);
  }
  return std::shared_ptr<const SequencePlan>(std::move(p));
}

SequenceList SequencePlan::MachineList(const SequenceList& list, uint32_t k) const {
  SequenceList out;
  for (const SequenceRange& r : list)
    AppendRange(std::max(r.begin, first_[k]), std::min(r.end, first_[k + 1]), &out);
  return out;
}

RankSequences SequencePlan::Slice(const SequenceList& list, uint32_t world, uint32_t rank) const {
  const SequenceList whole = {{0, epoch_sequences()}};
  const SequenceList& l = list.empty() ? whole : list;
  const uint32_t m = machines();
  if (m == 1) return SliceSequences(l, world, rank);
  const uint32_t local = std::max<uint32_t>(world, m) / m;
  RankSequences out = SliceSequences(MachineList(l, machine_), local, rank % local);
  for (SequenceRange& r : out.ranges) {
    r.begin -= first_[machine_];
    r.end -= first_[machine_];
  }
  out.rows = Rows(l, world);
  return out;
}

SequenceList SequencePlan::Remaining(const SequenceList& list, uint32_t world,
                                     uint64_t rows) const {
  const SequenceList whole = {{0, epoch_sequences()}};
  const SequenceList& l = list.empty() ? whole : list;
  const uint32_t m = machines();
  if (m == 1) return RemainingSequences(l, world, rows);
  const uint32_t local = std::max<uint32_t>(world, m) / m;
  SequenceList out;
  for (uint32_t k = 0; k < m; ++k) {
    for (const SequenceRange& r : RemainingSequences(MachineList(l, k), local, rows))
      AppendRange(r.begin, r.end, &out);
  }
  return out;
}

uint64_t SequencePlan::Rows(const SequenceList& list, uint32_t world) const {
  const SequenceList whole = {{0, epoch_sequences()}};
  const SequenceList& l = list.empty() ? whole : list;
  world = std::max<uint32_t>(world, 1);
  const uint32_t m = machines();
  const uint32_t local = m == 1 ? world : std::max<uint32_t>(world, m) / m;
  uint64_t rows = 0;
  for (uint32_t k = 0; k < m; ++k) {
    const uint64_t n = SequenceCount(m == 1 ? l : MachineList(l, k));
    rows = std::max(rows, n / local + (n % local != 0 ? 1 : 0));
  }
  return rows;
}

StreamWindow SequencePlan::Locate(const EpochLayout& layout, uint64_t token) const {
  StreamWindow at;
  const std::vector<uint64_t>& chunks = layout.chunks();
  for (uint64_t w = 0; w < layout.window_count(); ++w) {
    uint64_t tokens = 0;
    const uint64_t first = layout.WindowStart(w);
    for (uint64_t i = first; i < first + layout.WindowChunks(w); ++i)
      tokens += chunk_tokens_[chunks[i]];
    if (at.token + tokens > token || w + 1 == layout.window_count()) {
      at.window = w;
      return at;
    }
    at.token += tokens;
    at.position += order_.WindowSamples(layout, w);  // a world of one visits every record
  }
  return at;
}

}  // namespace rf
