// FieldSplit: how a batch of samples of several fields (io/fields.h) is handed out: each field by
// its name, as its kind is handed out alone (pipeline/output/loaded_batch.h's Field):
//
//   tensor   a view [n, *shape] of its dtype
//   tokens   a view of the batch's ids back to back, and a view of n + 1 int64 offsets (in ids)
//   bytes    the same, in bytes; an image field the loader decodes (ImageStage, `decoded`) is
//            instead the batch's samples: the decoded images
//   label    the batch's labels (int64)
//
// The fields other than the decoded one lie in one area of the batch's memory (after the decoded
// images, where there are any), laid out on the host (Layout) and put with one copy; each part
// starts at a multiple of kFieldAlign bytes.
//
// Thread safety: const after construction; its methods may run on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/fields.h"
#include "pipeline/output/loaded_batch.h"

namespace rf {

class FieldSplit {
 public:
  static constexpr size_t kFieldAlign = 256;

  // The fields of a dataset's header; `decoded`: the index of the image field the loader decodes
  // (-1: none).
  FieldSplit(std::vector<format::FieldSpec> fields, int decoded);

  // Where one part of the area lies (bytes from the area's start).
  struct Part {
    size_t values = 0, values_bytes = 0;
    size_t offsets = 0;  // tokens and bytes fields: n + 1 int64
  };

  // Where each stored field of the n samples (records back to back, n + 1 byte offsets) lies:
  // `spans` (resized) holds sample i's stored field k at i * stored() + k, its offset from
  // `records`. Every sample is parsed once, here; the others read the spans. Corruption-free
  // input is the caller's (Dataset::CheckSamples ran on every chunk); a sample that breaks the
  // layout is still refused here.
  Status Split(const uint8_t* records, const int64_t* offsets, uint32_t n,
               std::vector<format::FieldSpan>* spans) const;
  // The decoded field's bytes of the split samples into `bytes` and its n + 1 byte `offsets`.
  void TakeDecoded(const uint8_t* records, const std::vector<format::FieldSpan>& spans,
                   std::vector<uint8_t>* bytes, std::vector<int64_t>* field_offsets) const;
  // The area of every field but the decoded one and the label for the samples `keep` of the split
  // batch (indices into its samples, in order, `kept` of them; null: all), laid out into `host`
  // (resized to the area's bytes); parts[k] is stored field k's (in table order; the decoded
  // field's empty).
  void Layout(const uint8_t* records, const std::vector<format::FieldSpan>& spans,
              const uint32_t* keep, uint32_t kept, std::vector<uint8_t>* host,
              std::vector<Part>* parts) const;
  // The most bytes Layout can need for these n samples (any `keep`): what the batch reserves.
  size_t AreaBound(const int64_t* offsets, uint32_t n) const;
  // Sets `out`'s fields once the area lies at `area` in its memory (kept samples), the decoded
  // field being out's samples.
  void Describe(LoadedBatch& out, uint8_t* area, const std::vector<Part>& parts,
                uint32_t kept) const;

  const std::vector<format::FieldSpec>& fields() const { return fields_; }
  int decoded() const { return decoded_; }
  uint32_t stored() const { return stored_; }  // the fields with bytes (all but the label)

 private:
  // The stored field of table index i (its place in each sample's lengths), or -1 (the label).
  std::vector<int> stored_of_;
  std::vector<format::FieldSpec> fields_;
  int decoded_;
  uint32_t stored_ = 0;
};

}  // namespace rf
