// DecodeCheckpoint on forged checkpoints: the fuzzer's bytes set fields of a valid checkpoint
// (the model's sizes, several at once, SGD settings, position, ranks, optimizer, schedule,
// augmentation, tensor counts), cut or extend it, and the harness recomputes the checksum, so the
// forgery reaches the field checks. Whatever is accepted meets the checkpoint's contract.
#include <cstdint>
#include <vector>

#include "io/checksum.h"
#include "model/checkpoint.h"
#include "tools/fuzz/checkpoint_checks.h"
#include "tools/fuzz/fuzz_common.h"

using namespace rf;
using namespace rf::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const uint8_t flags = in.ConsumeIntegral<uint8_t>();
  std::vector<uint8_t> bytes = ValidCheckpoint();
  if (flags & 2) {
    // Several of the model's sizes at edge values at once: the products that size the tensors
    // (channels x conv[0] x 9, hidden x flat) wrap only where two or more factors are large,
    // which single edits seldom reach (channels and conv[0] at 2^31 make 2^62 floats, whose
    // byte size wraps to 0).
    for (const Field& f : CheckpointFields()) {
      if (f.offset >= 12 && f.offset < 44 && f.offset != 28 && in.ConsumeBool()) {
        PutField(&bytes, f.offset, f.width, EdgeValue(in));
      }
    }
  }
  if ((flags & 4) && GetField(bytes, 28, 4) == 2) {
    // The first tensor's count made to agree with the (edited) model, with the model's own
    // arithmetic, as a careful forger would: a count that wrapped then matches the file.
    ModelConfig m;
    m.channels = static_cast<uint32_t>(GetField(bytes, 12, 4));
    m.height = static_cast<uint32_t>(GetField(bytes, 16, 4));
    m.width = static_cast<uint32_t>(GetField(bytes, 20, 4));
    m.classes = static_cast<uint32_t>(GetField(bytes, 24, 4));
    m.conv = {static_cast<uint32_t>(GetField(bytes, 32, 4)),
              static_cast<uint32_t>(GetField(bytes, 36, 4))};
    m.hidden = static_cast<uint32_t>(GetField(bytes, 40, 4));
    PutField(&bytes, 200, 8, ParameterShapes(m)[0].count());
  }
  ApplyEdits(in, CheckpointFields(), 6, &bytes);
  if ((flags & 1) == 0 && bytes.size() >= 8) {
    PutField(&bytes, bytes.size() - 8, 8, Checksum(bytes.data(), bytes.size() - 8));
  }
  Result<Checkpoint> c = DecodeCheckpoint(bytes.data(), bytes.size(), "fuzz.ckpt");
  if (c.ok()) CheckAcceptedCheckpoint(*c);
  return 0;
}
