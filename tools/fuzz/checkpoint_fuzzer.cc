// DecodeCheckpoint on forged checkpoints: the fuzzer's bytes set fields of a valid checkpoint
// (the model's sizes, SGD settings, position, ranks, tensor counts), cut or extend it, and the
// harness recomputes the checksum, so the forgery reaches the field checks. Whatever is accepted
// meets the checkpoint's contract.
#include <cstdint>
#include <vector>

#include "io/checksum.h"
#include "kernels/checkpoint.h"
#include "tools/fuzz/checkpoint_checks.h"
#include "tools/fuzz/fuzz_common.h"

using namespace rf;
using namespace rf::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint8_t flags = in.ConsumeIntegral<uint8_t>();
  std::vector<uint8_t> bytes = ValidCheckpoint();
  ApplyEdits(in, CheckpointFields(), 6, &bytes);
  if ((flags & 1) == 0 && bytes.size() >= 8) {
    PutField(&bytes, bytes.size() - 8, 8, Checksum(bytes.data(), bytes.size() - 8));
  }
  Result<Checkpoint> c = DecodeCheckpoint(bytes.data(), bytes.size(), "fuzz.ckpt");
  if (c.ok()) CheckAcceptedCheckpoint(*c);
  return 0;
}
