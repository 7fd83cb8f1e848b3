// pipeline/fields/field_split.h: a batch of samples of several fields split into its fields.
#include "pipeline/fields/field_split.h"

#include <cstring>
#include <utility>

#include "io/format.h"

namespace rf {
namespace {

size_t Align(size_t v) {
  return (v + FieldSplit::kFieldAlign - 1) / FieldSplit::kFieldAlign * FieldSplit::kFieldAlign;
}

}  // namespace

FieldSplit::FieldSplit(std::vector<format::FieldSpec> fields, int decoded)
    : fields_(std::move(fields)), decoded_(decoded) {
  for (const format::FieldSpec& f : fields_)
    stored_of_.push_back(f.stored() ? static_cast<int>(stored_++) : -1);
}

Status FieldSplit::Split(const uint8_t* records, const int64_t* offsets, uint32_t n,
                         std::vector<format::FieldSpan>* spans) const {
  spans->resize(size_t{n} * stored_);
  for (uint32_t i = 0; i < n; ++i) {
    std::string why;
    format::FieldSpan* s = spans->data() + size_t{i} * stored_;
    if (!format::SplitSample(fields_, records + offsets[i],
                             static_cast<uint64_t>(offsets[i + 1] - offsets[i]), s, &why))
      return Status::Corruption("", "sample " + std::to_string(i) + " of the batch: " + why);
    for (uint32_t k = 0; k < stored_; ++k) s[k].offset += static_cast<uint64_t>(offsets[i]);
  }
  return Status::Ok();
}

void FieldSplit::TakeDecoded(const uint8_t* records, const std::vector<format::FieldSpan>& spans,
                             std::vector<uint8_t>* bytes,
                             std::vector<int64_t>* field_offsets) const {
  const size_t k = static_cast<size_t>(stored_of_.at(static_cast<size_t>(decoded_)));
  bytes->clear();
  field_offsets->assign(1, 0);
  for (size_t i = 0; i < spans.size() / stored_; ++i) {
    const format::FieldSpan& sp = spans[i * stored_ + k];
    bytes->insert(bytes->end(), records + sp.offset, records + sp.offset + sp.size);
    field_offsets->push_back(static_cast<int64_t>(bytes->size()));
  }
}

size_t FieldSplit::AreaBound(const int64_t* offsets, uint32_t n) const {
  // Every field's bytes at most the samples' whole bytes, plus offsets and alignment each.
  const size_t all = static_cast<size_t>(offsets[n] - offsets[0]);
  return fields_.size() * (Align(all) + Align((size_t{n} + 1) * sizeof(int64_t)));
}

void FieldSplit::Layout(const uint8_t* records, const std::vector<format::FieldSpan>& spans,
                        const uint32_t* keep, uint32_t kept, std::vector<uint8_t>* host,
                        std::vector<Part>* parts) const {
  if (keep == nullptr) kept = static_cast<uint32_t>(spans.size() / stored_);
  // The sample of each kept place.
  auto sample = [&](uint32_t j) { return size_t{keep != nullptr ? keep[j] : j}; };
  parts->assign(stored_, Part{});
  size_t at = 0;
  for (size_t f = 0; f < fields_.size(); ++f) {
    const int k = stored_of_[f];
    if (k < 0 || static_cast<int>(f) == decoded_) continue;
    Part& p = (*parts)[static_cast<size_t>(k)];
    p.values = at;
    for (uint32_t j = 0; j < kept; ++j) p.values_bytes += spans[sample(j) * stored_ + k].size;
    at = Align(at + p.values_bytes);
    if (fields_[f].kind != format::FieldKind::kTensor) {
      p.offsets = at;
      at = Align(at + (size_t{kept} + 1) * sizeof(int64_t));
    }
  }
  host->resize(at);
  for (size_t f = 0; f < fields_.size(); ++f) {
    const int k = stored_of_[f];
    if (k < 0 || static_cast<int>(f) == decoded_) continue;
    const Part& p = (*parts)[static_cast<size_t>(k)];
    const size_t elem = DTypeSize(fields_[f].dtype);
    uint8_t* values = host->data() + p.values;
    int64_t* offs = fields_[f].kind != format::FieldKind::kTensor
                        ? reinterpret_cast<int64_t*>(host->data() + p.offsets)
                        : nullptr;
    size_t put = 0;
    if (offs != nullptr) offs[0] = 0;
    for (uint32_t j = 0; j < kept; ++j) {
      const format::FieldSpan& sp = spans[sample(j) * stored_ + k];
      if (sp.size != 0) std::memcpy(values + put, records + sp.offset, sp.size);
      put += sp.size;
      if (offs != nullptr) offs[j + 1] = static_cast<int64_t>(put / elem);
    }
  }
}

void FieldSplit::Describe(LoadedBatch& out, uint8_t* area, const std::vector<Part>& parts,
                          uint32_t kept) const {
  std::vector<LoadedBatch::View> views;
  std::vector<LoadedBatch::Field> fields;
  for (size_t f = 0; f < fields_.size(); ++f) {
    const format::FieldSpec& spec = fields_[f];
    LoadedBatch::Field field;
    field.name = spec.name;
    if (spec.kind == format::FieldKind::kLabel) {
      field.where = LoadedBatch::Field::kLabels;
    } else if (static_cast<int>(f) == decoded_) {
      field.where = LoadedBatch::Field::kSamples;
    } else {
      const Part& p = parts[static_cast<size_t>(stored_of_[f])];
      LoadedBatch::View v;
      v.data = area + p.values;
      v.dtype = spec.dtype;
      if (spec.kind == format::FieldKind::kTensor) {
        v.shape.push_back(kept);
        for (uint64_t d : spec.shape) v.shape.push_back(static_cast<int64_t>(d));
      } else {
        v.shape.push_back(static_cast<int64_t>(p.values_bytes / DTypeSize(spec.dtype)));
      }
      field.values = static_cast<int>(views.size());
      views.push_back(std::move(v));
      if (spec.kind != format::FieldKind::kTensor) {
        LoadedBatch::View o;
        o.data = area + p.offsets;
        o.dtype = DType::kInt64;
        o.shape.push_back(int64_t{kept} + 1);
        field.offsets = static_cast<int>(views.size());
        views.push_back(std::move(o));
      }
    }
    fields.push_back(std::move(field));
  }
  out.SetViews(std::move(views));
  out.SetFields(std::move(fields));
}

}  // namespace rf
