// DecodeCheckpoint on raw bytes: every read bounds-checked, the model checked before anything
// is sized from it, and whatever is accepted meets the checkpoint's contract.
#include <cstdint>

#include "model/checkpoint.h"
#include "tools/fuzz/checkpoint_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rf::Result<rf::Checkpoint> c = rf::DecodeCheckpoint(data, size, "fuzz.ckpt");
  if (c.ok()) rf::fuzz::CheckAcceptedCheckpoint(*c);
  return 0;
}
