// Backend: the one small interface the training loop (src/trainer.h) drives, whatever computes
// the model.
//   CpuBackend  (kernels/cpu_backend.h)   the reference; runs the main job where there is no GPU.
//   CudaBackend (kernels/cuda_backend.h)  cuDNN convolutions, cuBLAS fully connected layers.
// The loop does not know which one it drives; the pipeline (pipeline/) does not know backends at
// all: it hands batches (core/batch.h) in the memory a backend computes from.
//
// Memory: a backend allocates everything it needs for batches of up to max_batch samples at
// creation; no step allocates. A Batch (core/batch.h) points into the backend's memory space: host
// memory for the CPU backend, device memory for the CUDA backend (where it must stay valid until
// the work queued on the backend's compute stream has run).
//
// Statistics: steps accumulate loss and accuracy where they run (on the device for CUDA, so a
// step never waits for the GPU); TakeTrainStats() and TakeEvalStats() return and reset the sums
// (and synchronize).
//
// Thread safety: none; one thread drives a backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/augment.h"
#include "core/batch.h"
#include "core/status.h"
#include "kernels/gradient_reducer.h"
#include "model/model.h"

namespace rf {

struct StepStats {
  double loss_sum = 0;   // sum over samples of the cross-entropy
  uint64_t correct = 0;  // samples whose arg-max matched the label
  uint64_t samples = 0;
  double mean_loss() const { return samples ? loss_sum / samples : 0; }
  double accuracy() const { return samples ? static_cast<double>(correct) / samples : 0; }
};

// The checks every backend makes of a batch before using it: 1 <= n <= max_batch, samples and
// labels present, and sample and label types that are such. `backend` names it in the message.
Status CheckBatch(const Batch& batch, uint32_t max_batch, const char* backend);

// InvalidArgument naming `what` unless `t` holds one tensor per ParameterShapes(c) entry, each of
// the right size.
Status CheckShapes(const ModelConfig& c, const Tensors& t, const char* what);
// The checks every backend makes at creation, before its own size limits: the config valid
// (ModelConfig::Validate), max_batch at least 1, one normalization mean and std a channel, and
// `initial_params` of the model's shapes (CheckShapes). The first failure, as InvalidArgument
// (Validate's own status for the config); `backend` names it in the message ("CPU": "the CPU
// backend needs max_batch >= 1").
Status CheckBackendInputs(const ModelConfig& config, const Normalization& norm, uint32_t max_batch,
                          const Tensors& initial_params, const char* backend);
// InvalidArgument unless `t` holds one tensor per RunningStatShapes(c) entry, each of the right
// size.
Status CheckRunningStatShapes(const ModelConfig& c, const Tensors& t);
// Optimizer state (see Backend::GetState): 1 to kMaxOptimizerSlots slots of ParameterShapes(c)
// tensors. Returns the slot count, or InvalidArgument.
inline constexpr size_t kMaxOptimizerSlots = 2;
Result<size_t> CheckStateShapes(const ModelConfig& c, const Tensors& state);
// Zero state for `kind`: OptimizerSlots(kind) slots.
Tensors OptimizerStateZeros(const ModelConfig& c, OptimizerKind kind);

// What TrainStep returns for a batch whose loss or gradient is not finite (NaN or infinite: the
// run diverged; a ReLU can hide an infinite value from the loss, not from the gradient). That
// batch's update is not applied, so the parameters stay those of the last finite step. `when` says
// where it was found (the CUDA backend finds it a step or two later).
Status NonFiniteLossError(const std::string& when);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // Forward, backward and the update `opt` describes (model/model.h: SGD or AdamW at opt.lr,
  // the loss label-smoothed by opt.label_smoothing) on one batch (n <= max_batch). A batch whose
  // loss is not finite changes nothing and fails with NonFiniteLossError: at once on the CPU; on
  // the GPU, without waiting for it, from a TrainStep soon after (or the next Take*Stats' caller's
  // next call). The gradient reducer is called either way, so every rank takes part in each step.
  virtual Status TrainStep(const Batch& batch, const OptimizerConfig& opt) = 0;
  // Forward only, with the plain cross-entropy (no label smoothing); counts into the evaluation
  // statistics.
  virtual Status Evaluate(const Batch& batch) = 0;
  // Sums since the last call, for training and evaluation steps respectively.
  virtual StepStats TakeTrainStats() = 0;
  virtual StepStats TakeEvalStats() = 0;

  // Parameters, as host tensors in ParameterShapes order, and the optimizer state: the same
  // tensors once per slot (OptimizerSlots: SGD's velocity; AdamW's first moments, then its
  // second moments). GetState returns the slots of the optimizer of the last TrainStep (or, before
  // any, of the last SetState; 1 at creation); SetState takes 1 or 2 slots and zeroes a slot not
  // given (InvalidArgument for shapes that do not fit: CheckStateShapes).
  virtual Status GetState(Tensors* params, Tensors* optimizer_state) = 0;
  virtual Status SetState(const Tensors& params, const Tensors& optimizer_state) = 0;
  // Batch normalization's running statistics (model/model.h: RunningStatShapes order), as the
  // last TrainStep left them; none for a model without batch norm. SetRunningStats:
  // InvalidArgument where the tensors do not fit RunningStatShapes.
  virtual Status GetRunningStats(Tensors* stats) {
    stats->t.clear();
    return Status::Ok();
  }
  virtual Status SetRunningStats(const Tensors& stats) {
    return stats.t.empty() ? Status::Ok()
                           : Status::InvalidArgument("this model has no batch normalization");
  }

  // For timelines: calls fn(arg, done_ns) with the time the work queued so far finished, in
  // steady_clock nanoseconds since its epoch, on the calling thread: at once for a synchronous
  // backend; for the CUDA backend from a later WhenDone or Take*Stats call, once the GPU has got
  // there (timed by CUDA events, so the stream never waits for the host).
  using DoneFn = void (*)(void* arg, uint64_t done_ns);
  virtual Status WhenDone(DoneFn fn, void* arg) = 0;

  // For checks: the mean loss over the batch and the gradient of every parameter (without weight
  // decay), with no update. The rank's own gradient: the reducer is not called.
  virtual Status ComputeGradients(const Batch& batch, double* mean_loss, Tensors* grads) = 0;

  // Data-parallel training (kernels/gradient_reducer.h): each TrainStep hands its gradient to
  // `reducer` between the backward pass and the update, so the update applies the mean over the
  // ranks. Null (the default): the rank's own gradient, as on one GPU. The reducer must outlive
  // the backend (a CUDA backend's step graph holds the reduction). A backend allocates what the
  // reduction needs here, not per step.
  virtual Status SetGradientReducer(GradientReducer* reducer) {
    reducer_ = reducer;
    return Status::Ok();
  }

  // Augmentation (core/augment.h) of what TrainStep and ComputeGradients compute from: each sample
  // decoded through the transform `params` draws for (seed, batch.epoch, its global index in
  // batch.sample_indices), inside the backend's decode (no pass of its own). Evaluate never
  // augments. Off until called (and with params all off). With it on, a batch without
  // sample_indices fails with InvalidArgument.
  void SetAugmentation(const AugmentParams& params, uint64_t seed) {
    augment_ = params;
    augment_seed_ = seed;
  }

 protected:
  // What a training batch is decoded with: the parameters, seed, epoch and indices (params off:
  // no augmentation); InvalidArgument where augmentation is on and the batch does not say which
  // samples it holds.
  Result<AugmentBatch> TrainAugmentation(const Batch& batch) const {
    return AugmentationOf(batch, augment_, augment_seed_);
  }

  GradientReducer* reducer_ = nullptr;
  AugmentParams augment_;
  uint64_t augment_seed_ = 0;
};

}  // namespace rf
