#include "pipeline/order/world_order.h"

#include <algorithm>
#include <cstddef>
#include <numeric>

#include "pipeline/order/epoch_order.h"

namespace rf {
namespace {

// The second of the three seed words of the node partition's permutation (no epoch's key has
// three words: EpochOrder's has two, the windows' four or five).
constexpr uint64_t kPartitionWord = 0x6e6f64652d706172ull;  // "node-par"

// Deals `rounds` rounds of `members` consecutive chunks of `c`: round i's largest chunk to the
// member with the fewest samples so far, the next largest to the next (ties: the earlier chunk,
// the lower member); place(round, member, chunk). The members' totals (in *total, added to)
// then never differ by more than the largest chunk more than they did.
template <typename Place>
void GreedyRounds(const uint64_t* c, uint64_t rounds, uint32_t members,
                  const std::vector<uint32_t>& samples, std::vector<uint64_t>* total, Place place) {
  std::vector<uint32_t> by_total(members), by_size(members);
  for (uint64_t round = 0; round < rounds; ++round) {
    const uint64_t* r = c + round * members;
    std::iota(by_total.begin(), by_total.end(), 0u);
    std::stable_sort(by_total.begin(), by_total.end(),
                     [&](uint32_t a, uint32_t b) { return (*total)[a] < (*total)[b]; });
    std::iota(by_size.begin(), by_size.end(), 0u);
    std::stable_sort(by_size.begin(), by_size.end(),
                     [&](uint32_t a, uint32_t b) { return samples[r[a]] > samples[r[b]]; });
    for (uint32_t k = 0; k < members; ++k) {
      const uint32_t m = by_total[k];
      const uint64_t g = r[by_size[k]];
      place(round, m, g);
      (*total)[m] += samples[g];
    }
  }
}

}  // namespace

ChunkTable::ChunkTable(std::vector<uint32_t> chunk_samples) : samples(std::move(chunk_samples)) {
  first.assign(samples.size() + 1, 0);
  for (size_t g = 0; g < samples.size(); ++g) first[g + 1] = first[g] + samples[g];
  if (!samples.empty()) full_samples = *std::max_element(samples.begin(), samples.end());
  full_chunks = static_cast<uint64_t>(std::count(samples.begin(), samples.end(), full_samples));
}

WorldOrder::WorldOrder(std::shared_ptr<const ChunkTable> table, bool shuffle,
                       uint32_t window_chunks, uint32_t first_window_chunks, uint64_t seed,
                       uint32_t world_size, uint32_t node_ranks,
                       std::shared_ptr<const std::vector<uint64_t>> part)
    : table_(std::move(table)),
      window_(std::max<uint32_t>(1, window_chunks)),
      first_window_(std::clamp<uint32_t>(first_window_chunks, 1, window_)),
      shuffle_(shuffle),
      seed_(seed),
      world_(std::max<uint32_t>(1, world_size)) {
  if (part != nullptr && world_ == 1) {
    part_ = std::move(part);
    in_part_.assign(table_->samples.size(), false);
    for (uint64_t g : *part_) {
      in_part_[g] = true;
      part_samples_ += table_->samples[g];
    }
  }
  if (node_ranks >= 1 && world_ % node_ranks == 0 && world_ / node_ranks >= 2) {
    node_ranks_ = node_ranks;
    nodes_ = world_ / node_ranks;
  }
  SizeDeal();
  if (nodes_ != 0) PartitionByNode();
}

void WorldOrder::SizeDeal() {
  const uint64_t chunks = table_->samples.size();
  if (world_ == 1) {  // every chunk is rank 0's, whatever its size: the single-rank order
    dealt_total_ = dealt_ = part_ != nullptr ? part_->size() : chunks;
    return;
  }
  // Round-robin among the full chunks: each rank reads its dealt ones and the shared ones.
  dealt_ = table_->full_chunks / world_;
  dealt_total_ = dealt_ * world_;
  shared_ = chunks - dealt_total_;
  shared_samples_ = table_->sample_count() - dealt_total_ * table_->full_samples;
  // A rank reads C - (N - 1) * D chunks for D dealt: the deal that deals more reads fewer. A tie
  // keeps round-robin, the order from before balanced deals: a dataset of fixed-size records
  // keeps it. The balanced tail holds more than N chunks (N * (M + 1) samples, M the largest
  // chunk's), so it can deal more only where more than N + 1 chunks are not full.
  if (chunks - table_->full_chunks <= uint64_t{world_} + 1) return;
  // Its tail: K chunks, the fewest whose smallest K hold N * (M + 1) samples (N * (2M + 1) under
  // the node partition, whose nodes' totals and then ranks' each differ by up to M).
  std::vector<uint32_t> ascending = table_->samples;
  std::sort(ascending.begin(), ascending.end());
  const uint64_t spread = uint64_t{nodes_ != 0 ? 2u : 1u} * table_->full_samples;
  const uint64_t margin = uint64_t{world_} * (spread + 1);
  uint64_t tail = 0, held = 0;
  while (tail < chunks && held < margin) held += ascending[tail++];
  const uint64_t dealt = (chunks - tail) / world_;
  if (dealt > dealt_) {
    balanced_ = true;
    dealt_ = dealt;
    dealt_total_ = dealt * world_;
    shared_ = chunks - dealt_total_;
    shared_samples_ = 0;  // it varies with the epoch
  }
}

uint64_t WorldOrder::RankSamples() const {
  if (world_ == 1) return part_ != nullptr ? part_samples_ : table_->sample_count();
  if (balanced_) return (table_->sample_count() + world_ - 1) / world_;
  return dealt_ * table_->full_samples + (shared_samples_ + world_ - 1) / world_;
}

bool WorldOrder::HasPadding(uint32_t rank) const {
  if (world_ == 1) return false;
  // Either deal pads P = N * RankSamples() - samples of the ranks, the last P ranks one each.
  const uint64_t padding = uint64_t{world_} * RankSamples() - table_->sample_count();
  return rank + padding >= world_;
}

uint64_t WorldOrder::windows() const {
  if (dealt_ <= first_window_) return 1;
  return 1 + (dealt_ - first_window_ + window_ - 1) / window_;
}

uint64_t WorldOrder::max_window_chunks() const {
  const uint64_t last = windows() - 1;
  // Windows between the first and the last hold exactly W chunks.
  return std::max<uint64_t>({WindowChunks(0), WindowChunks(last), last >= 2 ? window_ : 0});
}

uint32_t WorldOrder::WindowChunks(uint64_t w) const {
  const uint64_t n = windows();
  if (w >= n) return 0;
  const uint64_t start = WindowStart(w);
  const uint64_t dealt =
      start >= dealt_ ? 0 : std::min<uint64_t>(dealt_ - start, w == 0 ? first_window_ : window_);
  return static_cast<uint32_t>(dealt + (w + 1 == n ? shared_ : 0));
}

EpochDeal WorldOrder::Deal(uint64_t epoch) const {
  std::vector<uint64_t> chunks;
  if (shuffle_) {
    chunks = EpochOrder(table_->samples.size(), seed_, epoch);
  } else {
    chunks.resize(table_->samples.size());
    std::iota(chunks.begin(), chunks.end(), uint64_t{0});
  }
  EpochDeal deal;
  if (world_ == 1) {
    if (part_ != nullptr) {
      std::erase_if(chunks, [&](uint64_t g) { return !in_part_[g]; });
    }
    deal.dealt = std::move(chunks);
    return deal;
  }
  if (nodes_ != 0) return DealByNode(chunks);
  if (balanced_) return DealBalanced(chunks);
  // The first dealt_total_ full chunks go round-robin; the rest to every rank, after its own.
  deal.dealt.reserve(dealt_total_);
  deal.shared.reserve(shared_);
  for (uint64_t g : chunks) {
    if (table_->IsFull(g) && deal.dealt.size() < dealt_total_) {
      deal.dealt.push_back(g);
    } else {
      deal.shared.push_back(g);
    }
  }
  return deal;
}

EpochDeal WorldOrder::DealBalanced(const std::vector<uint64_t>& chunks) const {
  EpochDeal deal;
  deal.dealt.resize(dealt_total_);
  deal.shared.assign(chunks.begin() + static_cast<ptrdiff_t>(dealt_total_), chunks.end());
  // Round i deals permutation chunks i*N .. i*N + N - 1, greedily: the ranks' totals then never
  // differ by more than the largest chunk.
  std::vector<uint64_t> total(world_, 0);
  GreedyRounds(chunks.data(), dealt_, world_, table_->samples, &total,
               [&](uint64_t round, uint32_t r, uint64_t g) { deal.dealt[round * world_ + r] = g; });
  AddShares(total, &deal);
  return deal;
}

void WorldOrder::AddShares(const std::vector<uint64_t>& total, EpochDeal* deal) const {
  // The shared stream makes every rank's count RankSamples(): rank r takes the next
  // RankSamples() - total[r] samples, less its padding entry. The tail's margin keeps every
  // count at least 0; the counts add up to the stream's length.
  const uint64_t each = RankSamples();
  uint64_t first = 0;
  for (uint32_t r = 0; r < world_; ++r) {
    const uint64_t want = total[r] + (HasPadding(r) ? 1 : 0);
    deal->shares.push_back({r, first, each > want ? each - want : 0});
    first += deal->shares.back().count;
  }
}

void WorldOrder::PartitionByNode() {
  const uint64_t chunks = table_->samples.size();
  std::vector<uint64_t> part;
  if (shuffle_) {
    part = SeededPermutation(chunks, {seed_, kPartitionWord, 0});
  } else {
    part.resize(chunks);
    std::iota(part.begin(), part.end(), uint64_t{0});
  }
  node_of_.assign(chunks, kSharedChunk);
  if (!balanced_) {  // the first D * N full chunks of the part, to the nodes in turn
    uint64_t i = 0;
    for (uint64_t g : part) {
      if (table_->IsFull(g) && i < dealt_total_) node_of_[g] = static_cast<uint32_t>(i++ % nodes_);
    }
    return;
  }
  std::vector<uint64_t> total(nodes_, 0);
  GreedyRounds(part.data(), dealt_total_ / nodes_, nodes_, table_->samples, &total,
               [&](uint64_t, uint32_t k, uint64_t g) { node_of_[g] = k; });
}

EpochDeal WorldOrder::DealByNode(const std::vector<uint64_t>& chunks) const {
  EpochDeal deal;
  deal.dealt.resize(dealt_total_);
  deal.shared.reserve(shared_);
  const uint32_t l = node_ranks_;
  const uint64_t per_node = dealt_ * l;  // chunks dealt to one node's ranks
  // Each node's chunks in the epoch's order; the shared ones in that order too.
  std::vector<uint64_t> by_node(dealt_total_), filled(nodes_, 0);
  for (uint64_t g : chunks) {
    const uint32_t k = node_of_[g];
    if (k == kSharedChunk) {
      deal.shared.push_back(g);
    } else {
      by_node[k * per_node + filled[k]++] = g;
    }
  }
  std::vector<uint64_t> total(world_, 0), local(l);
  for (uint32_t k = 0; k < nodes_; ++k) {
    const uint64_t* mine = by_node.data() + k * per_node;
    const uint32_t first_rank = k * l;
    if (!balanced_) {  // the t-th to local rank t mod L
      for (uint64_t t = 0; t < per_node; ++t)
        deal.dealt[(t / l) * world_ + first_rank + t % l] = mine[t];
      continue;
    }
    std::fill(local.begin(), local.end(), 0);
    GreedyRounds(mine, dealt_, l, table_->samples, &local,
                 [&](uint64_t round, uint32_t j, uint64_t g) {
                   deal.dealt[round * world_ + first_rank + j] = g;
                 });
    std::copy(local.begin(), local.end(), total.begin() + first_rank);
  }
  if (balanced_) AddShares(total, &deal);
  return deal;
}

RankShare WorldOrder::Share(const EpochDeal& deal, uint32_t rank) const {
  return rank < deal.shares.size() ? deal.shares[rank] : RankShare{rank, 0, 0};
}

WorldOrder::SharedRun WorldOrder::RunOf(const RankShare& share) const {
  const bool pad = HasPadding(share.rank);
  if (balanced_) return {share.first, 1, share.count, pad};
  const uint64_t take = (shared_samples_ + world_ - 1) / world_;
  return {share.rank, world_, take - (pad ? 1 : 0), pad};
}

std::vector<uint64_t> WorldOrder::RankChunks(const EpochDeal& deal, uint32_t rank) const {
  std::vector<uint64_t> chunks;
  chunks.reserve(dealt_ + shared_);
  for (uint64_t i = 0; i < dealt_ + shared_; ++i) chunks.push_back(RankChunk(deal, rank, i));
  return chunks;
}

void WorldOrder::AppendWindowChunks(const EpochDeal& deal, uint32_t rank, uint64_t w,
                                    std::vector<uint64_t>* out) const {
  const uint64_t start = WindowStart(w), count = WindowChunks(w);
  for (uint64_t i = start; i < start + count; ++i) out->push_back(RankChunk(deal, rank, i));
}

uint64_t WorldOrder::WindowSamples(const uint64_t* window_chunks, const RankShare& share,
                                   uint64_t w) const {
  const bool last = w + 1 == windows();
  const uint64_t dealt = WindowChunks(w) - (last ? shared_ : 0);
  uint64_t n = 0;
  for (uint64_t i = 0; i < dealt; ++i) n += table_->samples[window_chunks[i]];
  if (last) {
    const SharedRun run = RunOf(share);
    n += run.count + (run.pad ? 1 : 0);
  }
  return n;
}

std::vector<WindowEntry> WorldOrder::Window(const uint64_t* window_chunks, uint64_t epoch,
                                            const RankShare& share, uint64_t w,
                                            uint64_t* padding_at) const {
  const uint32_t rank = share.rank;
  const std::vector<uint32_t>& samples = table_->samples;
  std::vector<WindowEntry> stored;
  stored.reserve(WindowSamples(window_chunks, share, w));
  const bool last = w + 1 == windows();
  const uint64_t dealt = WindowChunks(w) - (last ? shared_ : 0);
  for (uint64_t i = 0; i < dealt; ++i) {
    for (uint32_t s = 0; s < samples[window_chunks[i]]; ++s) {
      stored.push_back({static_cast<uint32_t>(i), s});
    }
  }
  uint64_t padding = kNoPadding;  // its index in `stored`
  if (last) {
    // The rank's run of the shared stream (the shared chunks' samples back to back, in visiting
    // order), then its padding entry, the stream wrapped once: a sample the rank does not see
    // otherwise (round-robin: the run's next, stream[j mod S], from a chunk of this same window;
    // balanced: the run's next, the next rank's first).
    const uint64_t* shared = window_chunks + dealt;
    uint64_t stream = 0;
    for (uint64_t k = 0; k < shared_; ++k) stream += samples[shared[k]];
    const SharedRun run = RunOf(share);
    uint64_t k = 0, chunk_first = 0;  // shared chunk k holds stream[chunk_first ...]
    for (uint64_t i = 0; i < run.count + (run.pad ? 1 : 0); ++i) {
      uint64_t j = run.first + i * run.stride;
      if (i == run.count) {  // the padding: a stream that pads holds samples
        j %= stream;
        if (j < chunk_first) k = chunk_first = 0;
        padding = stored.size();
      }
      while (j >= chunk_first + samples[shared[k]]) {
        chunk_first += samples[shared[k]];
        ++k;
      }
      stored.push_back({static_cast<uint32_t>(dealt + k), static_cast<uint32_t>(j - chunk_first)});
    }
  }
  if (!shuffle_) {
    if (padding_at != nullptr) *padding_at = padding;
    return stored;
  }
  const std::vector<uint64_t> perm =
      world_ == 1 ? SeededPermutation(stored.size(), {seed_, epoch, w, 1})
                  : SeededPermutation(stored.size(), {seed_, epoch, w, 1, rank});
  std::vector<WindowEntry> out(stored.size());
  if (padding_at != nullptr) *padding_at = kNoPadding;
  for (size_t i = 0; i < perm.size(); ++i) {
    out[i] = stored[perm[i]];
    if (perm[i] == padding && padding_at != nullptr) *padding_at = i;
  }
  return out;
}

}  // namespace rf
