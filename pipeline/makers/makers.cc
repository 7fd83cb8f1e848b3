#include "pipeline/makers/makers.h"

namespace rf {
namespace {

using MakeFn = Result<std::unique_ptr<BatchMaker>> (*)(const MakerParts&,
                                                       std::shared_ptr<OutputPool>*);
struct MakerRow {
  BatchKind kind;
  MakeFn make;
};

// One row a kind of batch.
constexpr MakerRow kMakers[] = {
    {BatchKind::kTensors, MakeTensorMaker}, {BatchKind::kRecords, MakeRecordMaker},
    {BatchKind::kImages, MakeImageMaker},   {BatchKind::kSequences, MakeSequenceMaker},
    {BatchKind::kFields, MakeFieldsMaker},
};

}  // namespace

Result<std::unique_ptr<BatchMaker>> MakeBatchMaker(const MakerParts& parts,
                                                   std::shared_ptr<OutputPool>* pool) {
  for (const MakerRow& row : kMakers) {
    if (row.kind == parts.plan.kind) return row.make(parts, pool);
  }
  return Status::Unsupported(std::string("no maker for batches of kind ") +
                             BatchKindName(parts.plan.kind));
}

}  // namespace rf
