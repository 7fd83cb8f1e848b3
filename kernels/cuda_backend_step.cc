// CudaBackend's step: decode -> conv blocks (cuDNN) -> fc1 -> ReLU -> fc2 (cuBLAS) -> softmax
// cross-entropy and statistics -> backward in reverse -> SGD or AdamW, all queued on the one
// compute stream with no host synchronization (TrainStep, Evaluate) and no allocation.
//
// Row-major activations [n][features] are column-major [features][n] to cuBLAS, so every fully
// connected product below is written for column-major operands; the comment on each gives the
// row-major product it computes.
#include <cuda_runtime_api.h>

#include <string>

#include "cuda/augment_transforms.cuh"
#include "kernels/cuda_backend.h"
#include "kernels/cuda_bf16_kernels.cuh"
#include "kernels/dnn_check.h"

namespace rf {

cuda::CudaConvBlock::Buffers CudaBackend::BlockArgs(size_t b) const {
  cuda::CudaConvBlock::Buffers a;
  const BlockBuffers& bb = block_buffers_[b];
  a.x = b == 0 ? input_.data() : block_buffers_[b - 1].pooled.data();
  a.weight = options_.bf16 ? bb.filter_bf16.data() : Param(2 * b);
  a.bias = Param(2 * b + 1);
  a.act = bb.act.data();
  a.pooled = bb.pooled.data();
  a.pooled_grad = bb.pooled_grad.data();
  a.act_grad = act_grad_.data();
  a.weight_grad = options_.bf16 ? bb.filter_grad_bf16.data() : Grad(2 * b);
  a.bias_grad = Grad(2 * b + 1);
  a.bias_partial = bias_partial_.as<float>();
  a.x_grad = b == 0 ? nullptr : block_buffers_[b - 1].pooled_grad.data();
  if (config_.batch_norm) {
    const size_t scale = 2 * blocks_.size() + 4 + b;  // model/model.h: after fc2
    a.bn_scale = Param(scale);
    a.bn_scale_grad = Grad(scale);
    a.bn_saved = bb.bn_saved.as<float>();
    a.norm = bb.norm.data();
    const size_t mean = bn_offsets_[b], var = bn_channels_ + bn_offsets_[b];
    a.bn_batch_mean = bn_batch_.as<float>() + mean;
    a.bn_batch_var = bn_batch_.as<float>() + var;
    a.bn_running_mean = running_.as<float>() + mean;
    a.bn_running_var = running_.as<float>() + var;
  }
  return a;
}

Status CudaBackend::Gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
                         const float* b, int ldb, float* c, int ldc) {
  const float one = 1.f, zero = 0.f;
  // TF32 only where asked for: CUBLAS_COMPUTE_32F keeps full float products.
  const cublasComputeType_t compute =
      options_.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  RF_CUDA_CHECK(cublasGemmEx(cublas_.get(), trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                             trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, &one, a, CUDA_R_32F, lda,
                             b, CUDA_R_32F, ldb, &zero, c, CUDA_R_32F, ldc, compute,
                             CUBLAS_GEMM_DEFAULT));
  return Status::Ok();
}

Status CudaBackend::LoadBatch(const Batch& batch, const AugmentBatch& augment_in) {
  const uint32_t n = batch.n;
  AugmentBatch augment = augment_in;  // the samples' transforms drawn once, ahead of the decode
  RF_CUDA_CHECK(cuda::DrawBatchTransforms(&augment, n, config_.height, config_.width,
                                          transforms_.as<SampleTransform>(), stream_));
  if (n != batch_n_) {
    for (auto& block : blocks_) {
      RF_RETURN_IF_ERROR(block.SetBatch(cudnn_.get(), n, workspace_.bytes()));
    }
    batch_n_ = n;
  }
  RF_CUDA_CHECK(cudaMemsetAsync(&state()->step_bad, 0xff, sizeof(unsigned long long), stream_));
  const float* norm = norm_.as<float>();
  if (options_.bf16) {
    RF_CUDA_CHECK(cuda::DecodeSamplesBf16Nhwc(
        batch.samples, batch.sample_dtype, n, config_.channels, ConvInChannels(0), config_.height,
        config_.width, norm, norm + config_.channels, augment, input_.data(), stream_));
  } else {
    RF_CUDA_CHECK(cuda::DecodeSamples(batch.samples, batch.sample_dtype, n, config_.channels,
                                      config_.height, config_.width, norm, norm + config_.channels,
                                      augment, input_.as<float>(), stream_));
  }
  RF_CUDA_CHECK(cuda::DecodeLabels(batch.labels, batch.label_dtype, n, config_.classes,
                                   labels_.as<int32_t>(), &state()->step_bad, &state()->sticky_bad,
                                   stream_));
  return Status::Ok();
}

Status CudaBackend::FiltersToBf16() {
  for (size_t b = 0; b < blocks_.size(); ++b) {
    RF_CUDA_CHECK(cuda::FilterToBf16Khwc(config_.conv[b], InChannels(b), ConvInChannels(b),
                                         Param(2 * b), block_buffers_[b].filter_bf16.data(),
                                         stream_));
  }
  return Status::Ok();
}

// fc1's input: the last block's pooled output, [n][C][h][w] as it stands in float32 mode; in
// bf16 mode converted from [n][h][w][C] bf16 into fc_in_.
const float* CudaBackend::FcInput() const {
  return options_.bf16 ? fc_in_.as<float>() : block_buffers_.back().pooled.as<float>();
}

Status CudaBackend::Forward(uint32_t n, cuda::DeviceStats* stats, const float* smoothing,
                            bool training) {
  void* ws = workspace_.data();
  const size_t ws_bytes = workspace_.bytes();
  if (options_.bf16) RF_RETURN_IF_ERROR(FiltersToBf16());  // SGD changed the float masters
  for (size_t b = 0; b < blocks_.size(); ++b) {
    RF_RETURN_IF_ERROR(blocks_[b].Forward(cudnn_.get(), BlockArgs(b), ws, ws_bytes, training));
  }
  const int last = static_cast<int>(blocks_.size()) - 1;
  if (options_.bf16) {
    RF_CUDA_CHECK(cuda::NhwcBf16ToFlat(n, config_.HeightAfter(last), config_.WidthAfter(last),
                                       config_.conv.back(), block_buffers_.back().pooled.data(),
                                       fc_in_.as<float>(), stream_));
  }
  const float* x = FcInput();
  const size_t fc1 = 2 * blocks_.size();
  const int in = static_cast<int>(n), flat = static_cast<int>(flat_);
  const int hidden = static_cast<int>(config_.hidden), classes = static_cast<int>(config_.classes);
  // hidden[n][H] = x[n][F] . W1[H][F]^T
  RF_RETURN_IF_ERROR(
      Gemm(true, false, hidden, in, flat, Param(fc1), flat, x, flat, hidden_.as<float>(), hidden));
  RF_CUDA_CHECK(
      cuda::AddBiasRelu(n, config_.hidden, Param(fc1 + 1), true, hidden_.as<float>(), stream_));
  // logits[n][K] = hidden[n][H] . W2[K][H]^T
  RF_RETURN_IF_ERROR(Gemm(true, false, classes, in, hidden, Param(fc1 + 2), hidden,
                          hidden_.as<float>(), hidden, logits_.as<float>(), classes));
  RF_CUDA_CHECK(
      cuda::AddBiasRelu(n, config_.classes, Param(fc1 + 3), false, logits_.as<float>(), stream_));
  // The gradient of the MEAN loss: scaled by 1 / n.
  RF_CUDA_CHECK(
      cuda::SoftmaxCrossEntropy(n, config_.classes, logits_.as<float>(), labels_.as<int32_t>(),
                                1.f / static_cast<float>(n), smoothing, logits_grad_.as<float>(),
                                row_loss_.as<double>(), row_correct_.as<uint32_t>(), stream_));
  if (stats != nullptr) RF_RETURN_IF_ERROR(CountStep(n, stats));
  return Status::Ok();
}

Status CudaBackend::CountStep(uint32_t n, cuda::DeviceStats* stats) {
  RF_CUDA_CHECK(cuda::AccumulateStats(n, row_loss_.as<double>(), row_correct_.as<uint32_t>(),
                                      &state()->step_bad, &state()->sticky_bad, stats, stream_));
  return Status::Ok();
}

Status CudaBackend::FinishGradients(uint32_t n) {
  RF_CUDA_CHECK(cuda::CheckFinite(padded_count_, grads_.as<float>(), &state()->step_bad,
                                  &state()->sticky_bad, stream_));
  return CountStep(n, &state()->train);
}

Status CudaBackend::ReduceFinished(size_t unit) {
  for (size_t k = 0; k < buckets_.size(); ++k) {
    if (buckets_[k].last_unit != unit) continue;
    // Fork: the reduce stream takes the bucket once the compute stream has written it. The
    // backward pass goes on writing other units' gradients, never this bucket's ranges.
    RF_CUDA_CHECK(cudaEventRecord(bucket_ready_[k].get(), stream_));
    RF_CUDA_CHECK(cudaStreamWaitEvent(reduce_stream_.get(), bucket_ready_[k].get(), 0));
    for (const GradientRange& r : buckets_[k].ranges) {
      RF_RETURN_IF_ERROR(
          reducer_->MeanOverRanks(Grad(0) + r.offset, r.count, reduce_stream_.get()));
    }
    if (k + 1 == buckets_.size()) {  // join: the finite check and the update read every bucket
      RF_CUDA_CHECK(cudaEventRecord(reduced_.get(), reduce_stream_.get()));
      RF_CUDA_CHECK(cudaStreamWaitEvent(stream_, reduced_.get(), 0));
    }
  }
  return Status::Ok();
}

Status CudaBackend::Backward(uint32_t n, bool reduce) {
  // Backward units (kernels/reduce_buckets.h): 0 fc2, 1 fc1, 2 + j block blocks - 1 - j.
  auto finished = [&](size_t unit) { return reduce ? ReduceFinished(unit) : Status::Ok(); };
  const float* x = FcInput();
  float* x_grad =
      options_.bf16 ? fc_in_grad_.as<float>() : block_buffers_.back().pooled_grad.as<float>();
  const size_t fc1 = 2 * blocks_.size();
  const int in = static_cast<int>(n), flat = static_cast<int>(flat_);
  const int hidden = static_cast<int>(config_.hidden), classes = static_cast<int>(config_.classes);
  const float one = 1.f, zero = 0.f;

  // dW2[K][H] = dlogits[n][K]^T . hidden[n][H]
  RF_RETURN_IF_ERROR(Gemm(false, true, hidden, classes, in, hidden_.as<float>(), hidden,
                          logits_grad_.as<float>(), classes, Grad(fc1 + 2), hidden));
  // db2[K] = column sums of dlogits[n][K] (a product with ones: deterministic, no atomics)
  RF_CUDA_CHECK(cublasSgemv(cublas_.get(), CUBLAS_OP_N, classes, in, &one, logits_grad_.as<float>(),
                            classes, ones_.as<float>(), 1, &zero, Grad(fc1 + 3), 1));
  RF_RETURN_IF_ERROR(finished(0));
  // dhidden[n][H] = dlogits[n][K] . W2[K][H], then through fc1's ReLU
  RF_RETURN_IF_ERROR(Gemm(false, false, hidden, in, classes, Param(fc1 + 2), hidden,
                          logits_grad_.as<float>(), classes, hidden_grad_.as<float>(), hidden));
  RF_CUDA_CHECK(cuda::ReluBackward(size_t{n} * config_.hidden, hidden_.as<float>(),
                                   hidden_grad_.as<float>(), stream_));
  // dW1[H][F] = dhidden[n][H]^T . x[n][F]
  RF_RETURN_IF_ERROR(Gemm(false, true, flat, hidden, in, x, flat, hidden_grad_.as<float>(), hidden,
                          Grad(fc1), flat));
  RF_CUDA_CHECK(cublasSgemv(cublas_.get(), CUBLAS_OP_N, hidden, in, &one, hidden_grad_.as<float>(),
                            hidden, ones_.as<float>(), 1, &zero, Grad(fc1 + 1), 1));
  RF_RETURN_IF_ERROR(finished(1));
  // dx[n][F] = dhidden[n][H] . W1[H][F]: the gradient of the last block's pooled output
  RF_RETURN_IF_ERROR(Gemm(false, false, flat, in, hidden, Param(fc1), flat,
                          hidden_grad_.as<float>(), hidden, x_grad, flat));

  if (options_.bf16) {
    const int last = static_cast<int>(blocks_.size()) - 1;
    RF_CUDA_CHECK(cuda::FlatToNhwcBf16(n, config_.HeightAfter(last), config_.WidthAfter(last),
                                       config_.conv.back(), x_grad,
                                       block_buffers_.back().pooled_grad.data(), stream_));
  }
  void* ws = workspace_.data();
  const size_t ws_bytes = workspace_.bytes();
  for (size_t b = blocks_.size(); b-- > 0;) {
    RF_RETURN_IF_ERROR(blocks_[b].Backward(cudnn_.get(), BlockArgs(b), ws, ws_bytes));
    if (options_.bf16) {
      RF_CUDA_CHECK(cuda::FilterGradToFloatKchw(config_.conv[b], InChannels(b), ConvInChannels(b),
                                                block_buffers_[b].filter_grad_bf16.data(),
                                                Grad(2 * b), stream_));
    }
    RF_RETURN_IF_ERROR(finished(2 + (blocks_.size() - 1 - b)));
  }
  return Status::Ok();
}

Status CudaBackend::Gradients(uint32_t n) {
  RF_RETURN_IF_ERROR(Forward(n, nullptr, &state()->smoothing_train, /*training=*/true));
  // Data-parallel: the flat gradient buffer (its gaps are zeros on every rank) becomes the mean
  // over the ranks before the finite check, which then looks at the mean, so every rank decides
  // alike: bucket by bucket during the backward pass on the reduce stream, joined back before
  // the check (Bucketed), or in one reduction on this stream after it.
  RF_RETURN_IF_ERROR(Backward(n, /*reduce=*/Bucketed()));
  if (reducer_ != nullptr && !Bucketed()) {
    RF_RETURN_IF_ERROR(reducer_->MeanOverRanks(grads_.as<float>(), padded_count_, stream_));
  }
  return FinishGradients(n);
}

Status CudaBackend::ForwardBackward(uint32_t n) {
  // The graph holds the pointers and sizes of a full batch; other sizes (an epoch's last batch)
  // run eagerly. The first full batch also runs eagerly, so that lazy kernel loading and the
  // libraries' first-call setup happen outside the capture. The ranks' all-reduce is captured
  // with the rest (NCCL supports capture; every rank captures at the same step, as NCCL asks,
  // since every rank's batches have the same sizes step for step).
  if (!options_.cuda_graph || n != max_batch_ || !graph_warmed_) {
    graph_warmed_ = graph_warmed_ || n == max_batch_;
    return Gradients(n);
  }
  const bool replay = static_cast<bool>(graph_);
  if (!graph_) {
    RF_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    RF_ASSIGN_OR_RETURN(graph_, cuda::EndCaptureAndInstantiate(stream_, Gradients(n)));
  }
  RF_CUDA_CHECK(cudaGraphLaunch(graph_.get(), stream_));
  if (replay) ++graph_replays_;
  return Status::Ok();
}

Status CudaBackend::SetSmoothing(float smoothing) {
  if (smoothing == smoothing_) return Status::Ok();
  // Rare (a run's first step): wait until no queued copy still reads the pinned source.
  RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  host()->smoothing = smoothing;
  RF_CUDA_CHECK(cudaMemcpyAsync(&state()->smoothing_train, &host()->smoothing, sizeof(float),
                                cudaMemcpyHostToDevice, stream_));
  smoothing_ = smoothing;
  return Status::Ok();
}

Status CudaBackend::TrainStep(const Batch& batch, const OptimizerConfig& opt) {
  RF_ASSIGN_OR_RETURN(const AugmentBatch augment, TrainAugmentation(batch));
  RF_RETURN_IF_ERROR(Begin(&batch));
  RF_RETURN_IF_ERROR(SetSmoothing(opt.label_smoothing));
  RF_RETURN_IF_ERROR(LoadBatch(batch, augment));
  RF_RETURN_IF_ERROR(ForwardBackward(batch.n));
  // The update's arguments (the scheduled lr among them) are launch arguments, queued anew each
  // step: outside the CUDA graph.
  slots_ = OptimizerSlots(opt.kind);
  if (opt.kind == OptimizerKind::kAdamW) {
    const AdamWFactors f = OptimizerFactors(opt);
    cuda::AdamWArgs a{f.decay,           opt.beta1,   f.one_minus_beta1, opt.beta2,
                      f.one_minus_beta2, f.step_size, f.sqrt_bc2,        opt.eps};
    RF_CUDA_CHECK(cuda::AdamW(padded_count_, a, grads_.as<float>(), params_.as<float>(),
                              momentum_.as<float>(), second_moment_.as<float>(), &state()->step_bad,
                              stream_));
  } else {
    RF_CUDA_CHECK(cuda::SgdMomentum(padded_count_, opt.lr, opt.momentum, opt.weight_decay,
                                    grads_.as<float>(), params_.as<float>(), momentum_.as<float>(),
                                    &state()->step_bad, stream_));
  }
  if (config_.batch_norm) {  // gated like the update: only an applied step moves them
    RF_CUDA_CHECK(cuda::UpdateRunningStats(2 * bn_channels_, kBatchNormMomentum,
                                           bn_batch_.as<float>(), running_.as<float>(),
                                           &state()->step_bad, stream_));
  }
  return EndStep();
}

Status CudaBackend::Evaluate(const Batch& batch) {
  RF_RETURN_IF_ERROR(Begin(&batch));
  RF_RETURN_IF_ERROR(LoadBatch(batch, AugmentBatch{}));  // evaluation is never augmented
  RF_RETURN_IF_ERROR(Forward(batch.n, &state()->eval, &state()->smoothing_none,
                             /*training=*/false));
  return EndStep();
}

Status CudaBackend::ComputeGradients(const Batch& batch, double* mean_loss, Tensors* grads) {
  RF_ASSIGN_OR_RETURN(const AugmentBatch augment, TrainAugmentation(batch));
  RF_RETURN_IF_ERROR(Begin(&batch));
  RF_RETURN_IF_ERROR(LoadBatch(batch, augment));
  RF_CUDA_CHECK(cudaMemsetAsync(&state()->scratch, 0, sizeof(cuda::DeviceStats), stream_));
  RF_RETURN_IF_ERROR(Forward(batch.n, &state()->scratch, &state()->smoothing_none,
                             /*training=*/true));
  RF_RETURN_IF_ERROR(Backward(batch.n, /*reduce=*/false));
  RF_CUDA_CHECK(cudaMemcpyAsync(&host()->stats, &state()->scratch, sizeof(cuda::DeviceStats),
                                cudaMemcpyDeviceToHost, stream_));
  RF_CUDA_CHECK(cudaMemcpyAsync(host_stage_.data(), grads_.data(), grads_.bytes(),
                                cudaMemcpyDeviceToHost, stream_));
  RF_RETURN_IF_ERROR(EndStep());
  RF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  RF_RETURN_IF_ERROR(ReportBadLabel(/*wait=*/true));  // this batch's own labels
  if (mean_loss != nullptr) *mean_loss = host()->stats.loss_sum / batch.n;
  if (grads != nullptr) {
    grads->t.resize(shapes_.size());
    for (size_t t = 0; t < shapes_.size(); ++t) {
      const float* from = host_stage_.data() + offsets_[t];
      grads->t[t].assign(from, from + shapes_[t].count());
    }
  }
  return Status::Ok();
}

}  // namespace rf
