#include "pipeline/sequences/sequence_source.h"

#include <algorithm>
#include <string>

namespace rf {
namespace {

// Records a source's loader takes at a time (read in place: pipeline/sources/training_source.h's
// NextInPlace; the pieces of a batch that read them are copied before the next take).
constexpr uint32_t kRecordBatch = 512;

}  // namespace

Result<std::unique_ptr<SequenceSource>> SequenceSource::Make(const Dataset& d,
                                                             const PipelineConfig& pipeline,
                                                             uint32_t length, int64_t eod, bool pad,
                                                             uint64_t epochs) {
  const OrderSettings& order = pipeline.order;
  auto s = std::make_unique<SequenceSource>();
  s->dataset = &d;
  const format::Header& h = d.header();
  s->stored = h.sample_dtype;
  s->elem = DTypeSize(h.sample_dtype);
  s->eod = eod;
  s->world = order.world_size;
  s->rank = order.rank;
  RF_ASSIGN_OR_RETURN(s->plan,
                      SequencePlan::Make(d, order, length, eod >= 0, order.drop_last, pad));
  if (s->plan->epoch_sequences() == 0)
    return Status::Usage("sequence_length " + std::to_string(length) + ": " + d.shard_path(0) +
                         " holds " + std::to_string(s->plan->epoch_tokens()) +
                         " tokens, no whole sequence, and drop_last drops the partial one");
  // The records, in the world of one's order, in host memory, read in place (a source of its
  // own, streaming: no output buffers, no decode).
  PipelineConfig r = pipeline;
  r.data = d.shard_path(0);  // this source's, whatever the caller named
  r.weights = {};            // each source is one dataset
  r.mixture = {};
  r.device = DeviceKind::kCpu;
  r.order.rank = 0;
  r.order.world_size = 1;
  r.order.node_ranks = 0;
  r.partition = Partition::kGlobal;
  r.order.resumed = {};
  r.order.drop_last = false;
  r.order.batch_size = kRecordBatch;
  RF_RETURN_IF_ERROR(r.ValidateFor(d.ChunkSampleCounts()));
  StreamingOptions records = StreamingOptionsFor(r, epochs);
  records.pin = PinMode::kOff;
  records.part = s->plan->part();  // its machine's, under the node partition  // copied to host
                                   // staging, never read by a GPU's copy engine
  RF_ASSIGN_OR_RETURN(s->records, StreamingSource::Create(d, records, HostStaging()));
  s->Enter({});
  return s;
}

void SequenceSource::Enter(const SequenceSourceState& s) {
  st = s;
  st.world_size = world;
  slice = plan->Slice(st.list, world, rank);
  range = 0;
  in_range = 0;
  for (uint64_t skip = std::min(st.position, slice.count); skip > 0;) {
    const uint64_t k = std::min(skip, slice.ranges[range].size() - in_range);
    in_range += k;
    skip -= k;
    if (in_range == slice.ranges[range].size()) {
      ++range;
      in_range = 0;
    }
  }
  if (!have_layout || layout.epoch() != st.epoch) {
    layout = plan->order().Layout(st.epoch);
    have_layout = true;
  }
  tok = kNowhere;
  held = 0;
}

Status SequenceSource::Fill() {
  if (rec < held) return Status::Ok();
  packer->Flush();  // the pieces copy from the records in hand: before they go
  RF_ASSIGN_OR_RETURN(held, records->NextInPlace(&spans));
  rec = 0;
  off = 0;
  if (held == 0)
    return Status::Aborted("the token stream of " + dataset->shard_path(0) + " ended at token " +
                           std::to_string(tok) + " of epoch " + std::to_string(st.epoch) + "'s " +
                           std::to_string(plan->epoch_tokens()));
  return Status::Ok();
}

Status SequenceSource::Restart(uint64_t position) {
  packer->Flush();
  held = 0;
  return records->StartEpoch(st.epoch, position);
}

Status SequenceSource::Walk(uint64_t n, SequencePacker* pack, uint64_t dst, uint32_t at,
                            std::vector<uint32_t>* starts) {
  while (n > 0) {
    RF_RETURN_IF_ERROR(Fill());
    const uint64_t ids = RecordIds(), total = ids + (eod >= 0 ? 1 : 0);
    const uint64_t k = std::min(n, total - off);
    if (pack != nullptr) {
      if (off == 0 && starts != nullptr) starts->push_back(at);
      const uint64_t from_ids = off < ids ? std::min(k, ids - off) : 0;
      if (from_ids > 0) pack->Add(spans[rec].data + off * elem, stored, dst, from_ids);
      if (k > from_ids) pack->AddEod(dst + from_ids);  // the document's end
      dst += k;
      at += static_cast<uint32_t>(k);
    }
    off += k;
    n -= k;
    tok += k;
    if (off == total) {
      ++rec;
      off = 0;
    }
  }
  return Status::Ok();
}

Status SequenceSource::Seek(uint64_t token) {
  const StreamWindow w = plan->Locate(layout, token);
  RF_RETURN_IF_ERROR(Restart(w.position));
  tok = w.token;
  return Walk(token - w.token, nullptr, 0, 0, nullptr);
}

Status SequenceSource::Row(SequencePacker* pack, uint64_t dst, uint64_t* valid,
                           std::vector<uint32_t>* starts) {
  *valid = 0;
  if (st.position < slice.count && plan->pad()) {
    // Document `seq` of the epoch's order, cut at a row; `tok` counts documents here.
    const uint64_t seq = slice.ranges[range].begin + in_range;
    if (tok != seq) RF_RETURN_IF_ERROR(Restart(seq));
    RF_RETURN_IF_ERROR(Fill());
    const uint64_t total = RecordTokens();
    *valid = std::min(total, plan->row_tokens());
    RF_RETURN_IF_ERROR(Walk(*valid, pack, dst, 0, starts));
    if (*valid < total) RF_RETURN_IF_ERROR(Walk(total - *valid, nullptr, 0, 0, nullptr));
    tok = seq + 1;
    if (++in_range == slice.ranges[range].size()) {
      ++range;
      in_range = 0;
    }
  } else if (st.position < slice.count) {
    const uint64_t seq = slice.ranges[range].begin + in_range;
    const uint64_t first = seq * plan->row_tokens();
    *valid = std::min(plan->row_tokens(), plan->epoch_tokens() - first);
    if (tok != first) RF_RETURN_IF_ERROR(Seek(first));
    RF_RETURN_IF_ERROR(Walk(*valid, pack, dst, 0, starts));
    if (++in_range == slice.ranges[range].size()) {
      ++range;
      in_range = 0;
    }
  }
  ++st.position;
  return Status::Ok();
}

}  // namespace rf
