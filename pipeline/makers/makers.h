// The makers of each kind of batch (pipeline/makers/batch_maker.h), one row a kind: what the
// Loader (pipeline/loader.h) calls once its plan (pipeline/plan/loader_plan.h) is resolved and its
// device and source are built. A maker sizes the loader's output pool for its batches (none at
// the raw level: plan.decoded false) and prepares the device's decode.
//
// Ownership: the maker keeps references to the parts' source and device and a share of the
// pool; the Loader owns them and destroys the maker first.
#pragma once

#include <memory>
#include <vector>

#include "core/status.h"
#include "io/dataset.h"
#include "pipeline/fields/field_split.h"
#include "pipeline/makers/batch_maker.h"
#include "pipeline/output/loader_device.h"
#include "pipeline/output/output_pool.h"
#include "pipeline/plan/loader_options.h"
#include "pipeline/plan/loader_plan.h"
#include "pipeline/sources/training_source.h"

namespace rf {

// What the Loader built for its maker.
struct MakerParts {
  const LoaderPlan& plan;
  const LoaderOptions& options;
  const std::vector<const Dataset*>& datasets;  // one, or a mixture's
  TrainingSource* source;                       // over them, as the plan stages it (or null)
  LoaderDevice& device;
};

// The maker of plan.kind over `parts`, and through `pool` the output pool it sized (null at the
// raw level). Errors: the device's (memory, the decode's preparation), the decoder's at its
// making (nvJPEG that does not load where it was asked for).
Result<std::unique_ptr<BatchMaker>> MakeBatchMaker(const MakerParts& parts,
                                                   std::shared_ptr<OutputPool>* pool);

// Each kind's maker (its own file in pipeline/makers/), as the table calls it.
Result<std::unique_ptr<BatchMaker>> MakeTensorMaker(const MakerParts& parts,
                                                    std::shared_ptr<OutputPool>* pool);
Result<std::unique_ptr<BatchMaker>> MakeRecordMaker(const MakerParts& parts,
                                                    std::shared_ptr<OutputPool>* pool);
Result<std::unique_ptr<BatchMaker>> MakeImageMaker(const MakerParts& parts,
                                                   std::shared_ptr<OutputPool>* pool);
// The image maker over samples of several fields whose image field the stage decodes, the others
// laid out beside the images by `fields` (the fields maker's, with plan.image_field).
Result<std::unique_ptr<BatchMaker>> MakeImageFieldMaker(const MakerParts& parts,
                                                        std::shared_ptr<OutputPool>* pool,
                                                        std::shared_ptr<const FieldSplit> fields);
Result<std::unique_ptr<BatchMaker>> MakeSequenceMaker(const MakerParts& parts,
                                                      std::shared_ptr<OutputPool>* pool);
Result<std::unique_ptr<BatchMaker>> MakeFieldsMaker(const MakerParts& parts,
                                                    std::shared_ptr<OutputPool>* pool);

}  // namespace rf
