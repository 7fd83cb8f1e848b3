#include "pipeline/sequences/sequence_plan.h"

#include <algorithm>
#include <string>

namespace rf {
namespace {

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
      if (!out->empty() && out->back().end == b) {
        out->back().end = e;
      } else {
        out->push_back({b, e});
      }
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
  OrderSettings one = order;
  one.rank = 0;
  one.world_size = 1;
  one.resumed = {};
  std::shared_ptr<SequencePlan> p(new SequencePlan(d.ChunkSampleCounts(), one));
  p->length_ = sequence_length;
  p->pad_ = pad;
  p->chunk_tokens_.resize(d.chunk_count());
  const uint64_t elem = DTypeSize(h.sample_dtype);
  for (size_t g = 0; g < d.chunk_count(); ++g) {
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
    p->chunk_tokens_[g] = c.entry.record_bytes / elem + (eod ? c.entry.sample_count : 0);
    p->tokens_ += p->chunk_tokens_[g];
  }
  const uint64_t row = p->row_tokens();
  p->sequences_ =
      pad ? d.sample_count() : p->tokens_ / row + (!drop_last && p->tokens_ % row != 0 ? 1 : 0);
  return std::shared_ptr<const SequencePlan>(std::move(p));
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
