#include "kernels/cpu_backend.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <utility>

#include "decode/host_decode.h"

namespace rf {
Result<std::unique_ptr<CpuBackend>> CpuBackend::Create(const ModelConfig& config,
                                                       const Normalization& norm,
                                                       uint32_t max_batch,
                                                       const Tensors& initial_params,
                                                       unsigned threads) {
  RF_RETURN_IF_ERROR(CheckBackendInputs(config, norm, max_batch, initial_params, "CPU"));
  // OpenBLAS takes int sizes; the widest matrix is the first block's col, pixels columns wide.
  // (Each factor is below 2^32 and height x width at most 2^32, so the product cannot wrap.)
  if (uint64_t{max_batch} * (uint64_t{config.height} * config.width) > INT_MAX) {
    return Status::InvalidArgument("batch size " + std::to_string(max_batch) +
                                   " is too large for the CPU backend at this input size "
                                   "(batch x height x width must stay below 2^31)");
  }
  cpu::UseSingleThreadedBlas();
  return std::unique_ptr<CpuBackend>(
      new CpuBackend(config, norm, max_batch, initial_params, threads));
}

CpuBackend::CpuBackend(const ModelConfig& config, const Normalization& norm, uint32_t max_batch,
                       const Tensors& initial_params, unsigned threads)
    : config_(config),
      mean_(norm.mean),
      stddev_(norm.stddev),
      max_batch_(max_batch),
      flat_(config.FlatFeatures()),
      params_(initial_params),
      grads_(ZerosLike(config)),
      running_(InitialRunningStats(config)) {
  for (size_t slot = 0; slot < kMaxOptimizerSlots; ++slot) {
    for (auto& t : ZerosLike(config).t) state_.t.push_back(std::move(t));
  }
  const size_t b = max_batch;
  input_.resize(b * config.channels * config.height * config.width);
  labels_.resize(b);
  size_t col_size = 0;
  const uint32_t chunks = Chunks(max_batch);
  uint32_t in = config.channels;
  for (size_t i = 0; i < config.conv.size(); ++i) {
    Block blk;
    blk.shape.in_channels = in;
    blk.shape.out_channels = config.conv[i];
    blk.shape.height = config.HeightAfter(static_cast<int>(i) - 1);
    blk.shape.width = config.WidthAfter(static_cast<int>(i) - 1);
    const size_t plane = size_t{blk.shape.height} * blk.shape.width;
    const size_t out = b * blk.shape.out_channels * plane;
    const size_t pooled = b * blk.shape.out_channels * config.HeightAfter(static_cast<int>(i)) *
                          config.WidthAfter(static_cast<int>(i));
    blk.out.resize(out);
    blk.out_grad.resize(out);
    blk.pooled.resize(pooled);
    blk.pooled_grad.resize(pooled);
    blk.argmax.resize(pooled);
    blk.weight_grad_parts.resize(size_t{chunks} * blk.shape.out_channels * in * 9);
    blk.bias_grad_parts.resize(size_t{chunks} * blk.shape.out_channels);
    if (config.batch_norm) {
      for (auto* v : {&blk.bn_mean, &blk.bn_var, &blk.bn_invstd}) v->resize(blk.shape.out_channels);
      norm_.resize(std::max(norm_.size(), out));
    }
    col_size = std::max(col_size, size_t{in} * 9 * b * plane);
    blocks_.push_back(std::move(blk));
    in = config.conv[i];
  }
  col_.resize(col_size);
  flat_rows_.resize(b * flat_);
  flat_grad_.resize(b * flat_);
  hidden_.resize(b * config.hidden);
  hidden_grad_.resize(b * config.hidden);
  logits_.resize(b * config.classes);
  logits_grad_.resize(b * config.classes);
  // No more workers than chunks of the largest batch: the rest would only wait.
  workers_ = std::make_unique<cpu::CpuWorkers>(
      std::min(threads != 0 ? threads : cpu::CpuWorkers::AvailableCpus(), Chunks(max_batch)));
}

Status CpuBackend::CheckBatch(const Batch& batch) const {
  RF_RETURN_IF_ERROR(rf::CheckBatch(batch, max_batch_, "CPU"));
  Status bad = Status::Ok();
  decode::ForEachLabel(batch.label_dtype, batch.labels, batch.n, [&](uint32_t i, int64_t label) {
    if (bad.ok() && (label < 0 || label >= config_.classes)) {
      bad = Status::InvalidArgument("label " + std::to_string(label) + " of sample " +
                                    std::to_string(i) + " in the batch is outside [0, " +
                                    std::to_string(config_.classes) + ")");
    }
  });
  return bad;
}

void CpuBackend::LoadBatch(const Batch& batch, const AugmentBatch& augment) {
  decode::Plan plan;  // normalized float32, CNHW: the first convolution's im2col input
  plan.stored = batch.sample_dtype;
  plan.output = DType::kFloat32;
  plan.normalize = true;
  plan.layout = decode::Layout::kCNHW;
  plan.channels = plan.out_channels = config_.channels;
  plan.height = config_.height;
  plan.width = config_.width;
  plan.stats = {mean_.data(), stddev_.data()};
  decode::DecodeOnHost(plan, batch.samples, batch.n, input_.data(), augment);
  decode::ForEachLabel(batch.label_dtype, batch.labels, batch.n, [&](uint32_t i, int64_t label) {
    labels_[i] = static_cast<int32_t>(label);
  });
}

double CpuBackend::Forward(uint32_t n, uint64_t* correct, double smoothing, bool evaluating) {
  for (size_t b = 0; b < blocks_.size(); ++b) {
    if (!config_.batch_norm) {  // one pass per chunk: the tail reads what the conv just wrote
      workers_->ParallelFor(Chunks(n), [&](size_t chunk) {
        ConvForward(b, n, static_cast<uint32_t>(chunk));
        TailForward(b, n, static_cast<uint32_t>(chunk), blocks_[b].out.data());
      });
      continue;
    }
    // Batch norm needs every chunk's output of a channel before it can normalize any of them.
    workers_->ParallelFor(Chunks(n),
                          [&](size_t chunk) { ConvForward(b, n, static_cast<uint32_t>(chunk)); });
    workers_->ParallelFor(blocks_[b].shape.out_channels, [&](size_t c) {
      NormForward(b, n, static_cast<uint32_t>(c), evaluating);
    });
    workers_->ParallelFor(Chunks(n), [&](size_t chunk) {
      TailForward(b, n, static_cast<uint32_t>(chunk), norm_.data());
    });
  }

  // The last pooled output, [C][N][h*w], as fc1's input rows [N][C*h*w].
  const Block& last = blocks_.back();
  const size_t area = flat_ / last.shape.out_channels;
  for (size_t c = 0; c < last.shape.out_channels; ++c) {
    for (size_t img = 0; img < n; ++img) {
      std::copy_n(last.pooled.data() + (c * n + img) * area, area,
                  flat_rows_.data() + img * flat_ + c * area);
    }
  }

  // The fully connected layers are small next to the convolutions: whole batch, one thread.
  const uint32_t hidden = config_.hidden, classes = config_.classes;
  cpu::Gemm(false, true, n, hidden, flat_, flat_rows_.data(), flat_, params_.t[Fc1Weight()].data(),
            flat_, 0.f, hidden_.data(), hidden);
  cpu::AddColumnBias(n, hidden, params_.t[Fc1Bias()].data(), true, hidden_.data());
  cpu::Gemm(false, true, n, classes, hidden, hidden_.data(), hidden, params_.t[Fc2Weight()].data(),
            hidden, 0.f, logits_.data(), classes);
  cpu::AddColumnBias(n, classes, params_.t[Fc2Bias()].data(), false, logits_.data());
  return cpu::SoftmaxCrossEntropy(n, classes, logits_.data(), labels_.data(), 1.f / n,
                                  logits_grad_.data(), correct, smoothing);
}

void CpuBackend::Backward(uint32_t n) {
  const uint32_t hidden = config_.hidden, classes = config_.classes;
  // fc2, then its input's ReLU.
  cpu::Gemm(true, false, classes, hidden, n, logits_grad_.data(), classes, hidden_.data(), hidden,
            0.f, grads_.t[Fc2Weight()].data(), hidden);
  cpu::SumColumns(n, classes, logits_grad_.data(), grads_.t[Fc2Bias()].data());
  cpu::Gemm(false, false, n, hidden, classes, logits_grad_.data(), classes,
            params_.t[Fc2Weight()].data(), hidden, 0.f, hidden_grad_.data(), hidden);
  cpu::ReluBackward(size_t{n} * hidden, hidden_.data(), hidden_grad_.data());

  // fc1, and its input gradient back into the last block's CNHW layout.
  cpu::Gemm(true, false, hidden, flat_, n, hidden_grad_.data(), hidden, flat_rows_.data(), flat_,
            0.f, grads_.t[Fc1Weight()].data(), flat_);
  cpu::SumColumns(n, hidden, hidden_grad_.data(), grads_.t[Fc1Bias()].data());
  cpu::Gemm(false, false, n, flat_, hidden, hidden_grad_.data(), hidden,
            params_.t[Fc1Weight()].data(), flat_, 0.f, flat_grad_.data(), flat_);
  Block& last = blocks_.back();
  const size_t area = flat_ / last.shape.out_channels;
  for (size_t c = 0; c < last.shape.out_channels; ++c) {
    for (size_t img = 0; img < n; ++img) {
      std::copy_n(flat_grad_.data() + img * flat_ + c * area, area,
                  last.pooled_grad.data() + (c * n + img) * area);
    }
  }

  const uint32_t chunks = Chunks(n);
  for (size_t b = blocks_.size(); b-- > 0;) {
    if (!config_.batch_norm) {
      workers_->ParallelFor(chunks, [&](size_t chunk) {
        TailBackward(b, n, static_cast<uint32_t>(chunk));
        ConvBackward(b, n, static_cast<uint32_t>(chunk));
      });
    } else {
      workers_->ParallelFor(
          chunks, [&](size_t chunk) { TailBackward(b, n, static_cast<uint32_t>(chunk)); });
      workers_->ParallelFor(blocks_[b].shape.out_channels,
                            [&](size_t c) { NormBackward(b, n, static_cast<uint32_t>(c)); });
      workers_->ParallelFor(
          chunks, [&](size_t chunk) { ConvBackward(b, n, static_cast<uint32_t>(chunk)); });
    }
    // Sum the chunks' shares in chunk order, so the result does not depend on which thread ran
    // which chunk; slices of the weight tensor are spread over the workers.
    Block& blk = blocks_[b];
    float* weight_grad = grads_.t[ConvWeight(b)].data();
    const size_t count = grads_.t[ConvWeight(b)].size();
    constexpr size_t kSlice = 4096;
    workers_->ParallelFor((count + kSlice - 1) / kSlice, [&](size_t slice) {
      const size_t end = std::min(count, (slice + 1) * kSlice);
      for (size_t i = slice * kSlice; i < end; ++i) {
        float sum = blk.weight_grad_parts[i];
        for (size_t c = 1; c < chunks; ++c) sum += blk.weight_grad_parts[c * count + i];
        weight_grad[i] = sum;
      }
    });
    const uint32_t cout = blk.shape.out_channels;
    for (uint32_t o = 0; o < cout; ++o) {
      double sum = 0;
      for (size_t c = 0; c < chunks; ++c) sum += blk.bias_grad_parts[c * cout + o];
      grads_.t[ConvBias(b)][o] = static_cast<float>(sum);
    }
  }
}

cpu::ConvShape CpuBackend::ChunkShape(size_t b, uint32_t n, uint32_t chunk) const {
  cpu::ConvShape s = blocks_[b].shape;
  s.n = std::min(kChunkImages, n - chunk * kChunkImages);
  s.stride = n;
  return s;
}

void CpuBackend::ConvForward(size_t b, uint32_t n, uint32_t chunk) {
  Block& blk = blocks_[b];
  const cpu::ConvShape s = ChunkShape(b, n, chunk);
  // Offsets of the chunk's first image: in a CNHW tensor's channel 0, and in col's row 0.
  const size_t at = size_t{chunk} * kChunkImages * s.height * s.width;
  const float* in = (b == 0 ? input_.data() : blocks_[b - 1].pooled.data()) + at;
  float* col = col_.data() + at;
  cpu::Im2Col(s, in, col);
  cpu::Gemm(false, false, s.out_channels, s.pixels(), s.col_rows(), params_.t[ConvWeight(b)].data(),
            s.col_rows(), col, s.ld(), 0.f, blk.out.data() + at, s.ld());
}

void CpuBackend::TailForward(size_t b, uint32_t n, uint32_t chunk, const float* z) {
  Block& blk = blocks_[b];
  const cpu::ConvShape s = ChunkShape(b, n, chunk);
  const size_t first = size_t{chunk} * kChunkImages;
  const size_t at = first * s.height * s.width, pooled_at = first * (s.height / 2) * (s.width / 2);
  cpu::BiasReluMaxPool(s.out_channels, s.n, n, s.height, s.width, z + at,
                       params_.t[ConvBias(b)].data(), blk.pooled.data() + pooled_at,
                       blk.argmax.data() + pooled_at);
}

void CpuBackend::NormForward(size_t b, uint32_t n, uint32_t c, bool evaluating) {
  Block& blk = blocks_[b];
  const size_t m = size_t{n} * blk.shape.height * blk.shape.width;
  const float* x = blk.out.data() + c * m;
  float* z = norm_.data() + c * m;
  const float scale = params_.t[BnScale(b)][c];
  if (evaluating) {
    const size_t k = blocks_.size() + b;  // running_: the blocks' means, then their variances
    cpu::BatchNormChannelApply(m, x, running_.t[b][c], running_.t[k][c], scale, z);
    return;
  }
  cpu::BatchNormChannelStats(m, x, &blk.bn_mean[c], &blk.bn_var[c]);
  blk.bn_invstd[c] = cpu::BatchNormChannelApply(m, x, blk.bn_mean[c], blk.bn_var[c], scale, z);
}

void CpuBackend::NormBackward(size_t b, uint32_t n, uint32_t c) {
  Block& blk = blocks_[b];
  const size_t m = size_t{n} * blk.shape.height * blk.shape.width;
  cpu::BatchNormChannelBackward(m, blk.out.data() + c * m, blk.bn_mean[c], blk.bn_invstd[c],
                                params_.t[BnScale(b)][c], blk.out_grad.data() + c * m,
                                &grads_.t[BnScale(b)][c]);
}

void CpuBackend::UpdateRunningStats(uint32_t n) {
  for (size_t b = 0; b < blocks_.size() && config_.batch_norm; ++b) {
    const Block& blk = blocks_[b];
    const double m = static_cast<double>(n) * blk.shape.height * blk.shape.width;
    const float unbias = m > 1 ? static_cast<float>(m / (m - 1)) : 1.f;
    float* mean = running_.t[b].data();
    float* var = running_.t[blocks_.size() + b].data();
    for (uint32_t c = 0; c < blk.shape.out_channels; ++c) {
      mean[c] += kBatchNormMomentum * (blk.bn_mean[c] - mean[c]);
      var[c] += kBatchNormMomentum * (blk.bn_var[c] * unbias - var[c]);
    }
  }
}

void CpuBackend::TailBackward(size_t b, uint32_t n, uint32_t chunk) {
  Block& blk = blocks_[b];
  const cpu::ConvShape s = ChunkShape(b, n, chunk);
  const size_t first = size_t{chunk} * kChunkImages;
  const size_t at = first * s.height * s.width, pooled_at = first * (s.height / 2) * (s.width / 2);
  cpu::BiasReluMaxPoolBackward(s.out_channels, s.n, n, s.height, s.width,
                               blk.pooled.data() + pooled_at, blk.pooled_grad.data() + pooled_at,
                               blk.argmax.data() + pooled_at, blk.out_grad.data() + at,
                               blk.bias_grad_parts.data() + size_t{chunk} * s.out_channels);
}

void CpuBackend::ConvBackward(size_t b, uint32_t n, uint32_t chunk) {
  Block& blk = blocks_[b];
  const cpu::ConvShape s = ChunkShape(b, n, chunk);
  const size_t at = size_t{chunk} * kChunkImages * s.height * s.width;
  const float* out_grad = blk.out_grad.data() + at;
  // The forward pass's col was overwritten by later blocks: rebuild it (cheap next to the
  // sgemm) rather than keep one per block.
  const float* in = (b == 0 ? input_.data() : blocks_[b - 1].pooled.data()) + at;
  float* col = col_.data() + at;
  cpu::Im2Col(s, in, col);
  const size_t weights = s.out_channels * s.col_rows();
  cpu::Gemm(false, true, s.out_channels, s.col_rows(), s.pixels(), out_grad, s.ld(), col, s.ld(),
            0.f, blk.weight_grad_parts.data() + chunk * weights, s.col_rows());
  if (b == 0) return;  // nothing needs the gradient of the input
  cpu::Gemm(true, false, s.col_rows(), s.pixels(), s.out_channels, params_.t[ConvWeight(b)].data(),
            s.col_rows(), out_grad, s.ld(), 0.f, col, s.ld());
  cpu::Col2Im(s, col, blocks_[b - 1].pooled_grad.data() + at);
}

Status CpuBackend::TrainStep(const Batch& batch, const OptimizerConfig& opt) {
  RF_RETURN_IF_ERROR(CheckBatch(batch));
  RF_ASSIGN_OR_RETURN(const AugmentBatch augment, TrainAugmentation(batch));
  LoadBatch(batch, augment);
  uint64_t correct = 0;
  const double loss = Forward(batch.n, &correct, opt.label_smoothing);
  Backward(batch.n);
  RF_RETURN_IF_ERROR(ReduceGradients());  // every rank takes part, whatever its own loss
  const auto finite = [](const std::vector<float>& t) {
    return std::all_of(t.begin(), t.end(), [](float g) { return std::isfinite(g); });
  };
  if (!std::isfinite(loss) || !std::all_of(grads_.t.begin(), grads_.t.end(), finite))
    return NonFiniteLossError("in this batch");
  slots_ = OptimizerSlots(opt.kind);
  if (opt.kind == OptimizerKind::kAdamW) {
    ApplyAdamW(opt);
  } else {
    ApplySgd(opt);
  }
  UpdateRunningStats(batch.n);
  train_stats_.loss_sum += loss;
  train_stats_.correct += correct;
  train_stats_.samples += batch.n;
  return Status::Ok();
}

Status CpuBackend::SetGradientReducer(GradientReducer* reducer) {
  reducer_ = reducer;
  size_t count = 0;
  for (const auto& t : grads_.t) count += t.size();
  reduce_buf_.assign(reducer != nullptr ? count : 0, 0.f);
  return Status::Ok();
}

Status CpuBackend::ReduceGradients() {
  if (reducer_ == nullptr) return Status::Ok();
  float* at = reduce_buf_.data();
  for (const auto& t : grads_.t) at = std::copy(t.begin(), t.end(), at);
  RF_RETURN_IF_ERROR(reducer_->MeanOverRanks(reduce_buf_.data(), reduce_buf_.size(), nullptr));
  const float* from = reduce_buf_.data();
  for (auto& t : grads_.t) {
    std::copy_n(from, t.size(), t.begin());
    from += t.size();
  }
  return Status::Ok();
}

Status CpuBackend::Evaluate(const Batch& batch) {
  RF_RETURN_IF_ERROR(CheckBatch(batch));
  LoadBatch(batch, AugmentBatch{});  // evaluation is never augmented
  uint64_t correct = 0;
  eval_stats_.loss_sum += Forward(batch.n, &correct, 0, /*evaluating=*/true);
  eval_stats_.correct += correct;
  eval_stats_.samples += batch.n;
  return Status::Ok();
}

StepStats CpuBackend::TakeTrainStats() { return std::exchange(train_stats_, StepStats{}); }
StepStats CpuBackend::TakeEvalStats() { return std::exchange(eval_stats_, StepStats{}); }

// torch.optim.SGD (dampening 0, no Nesterov): g += wd * w; v = momentum * v + g; w -= lr * v.
void CpuBackend::ApplySgd(const OptimizerConfig& opt) {
  for (size_t t = 0; t < params_.t.size(); ++t) {
    float* w = params_.t[t].data();
    float* v = state_.t[t].data();
    const float* g = grads_.t[t].data();
    for (size_t i = 0; i < params_.t[t].size(); ++i) {
      const float gi = g[i] + opt.weight_decay * w[i];
      v[i] = opt.momentum * v[i] + gi;
      w[i] -= opt.lr * v[i];
    }
  }
}

// torch.optim.AdamW, in the order model/model.h states (the CUDA kernel rounds the same way).
void CpuBackend::ApplyAdamW(const OptimizerConfig& opt) {
  const AdamWFactors f = OptimizerFactors(opt);
  const size_t tensors = params_.t.size();
  for (size_t t = 0; t < tensors; ++t) {
    float* w = params_.t[t].data();
    float* m = state_.t[t].data();
    float* v = state_.t[tensors + t].data();
    const float* g = grads_.t[t].data();
    for (size_t i = 0; i < params_.t[t].size(); ++i) {
      const float wi = w[i] * f.decay;
      m[i] = opt.beta1 * m[i] + f.one_minus_beta1 * g[i];
      v[i] = opt.beta2 * v[i] + f.one_minus_beta2 * (g[i] * g[i]);
      const float denom = std::sqrt(v[i]) / f.sqrt_bc2 + opt.eps;
      w[i] = wi - f.step_size * (m[i] / denom);
    }
  }
}

Status CpuBackend::GetState(Tensors* params, Tensors* optimizer_state) {
  if (params != nullptr) *params = params_;
  if (optimizer_state != nullptr) {
    const size_t count = slots_ * params_.t.size();
    optimizer_state->t.assign(state_.t.begin(), state_.t.begin() + count);
  }
  return Status::Ok();
}

Status CpuBackend::SetState(const Tensors& params, const Tensors& optimizer_state) {
  RF_RETURN_IF_ERROR(CheckShapes(config_, params, "parameters"));
  RF_ASSIGN_OR_RETURN(const size_t slots, CheckStateShapes(config_, optimizer_state));
  for (size_t t = 0; t < params_.t.size(); ++t) {
    std::copy(params.t[t].begin(), params.t[t].end(), params_.t[t].begin());
  }
  for (size_t t = 0; t < state_.t.size(); ++t) {
    if (t < optimizer_state.t.size()) {
      std::copy(optimizer_state.t[t].begin(), optimizer_state.t[t].end(), state_.t[t].begin());
    } else {
      std::fill(state_.t[t].begin(), state_.t[t].end(), 0.f);  // a slot not given starts at 0
    }
  }
  slots_ = slots;
  return Status::Ok();
}

Status CpuBackend::GetRunningStats(Tensors* stats) {
  *stats = running_;
  return Status::Ok();
}

Status CpuBackend::SetRunningStats(const Tensors& stats) {
  RF_RETURN_IF_ERROR(CheckRunningStatShapes(config_, stats));
  running_ = stats;
  return Status::Ok();
}

Status CpuBackend::ComputeGradients(const Batch& batch, double* mean_loss, Tensors* grads) {
  RF_RETURN_IF_ERROR(CheckBatch(batch));
  RF_ASSIGN_OR_RETURN(const AugmentBatch augment, TrainAugmentation(batch));
  LoadBatch(batch, augment);
  uint64_t correct = 0;
  const double loss = Forward(batch.n, &correct, 0);
  Backward(batch.n);
  if (mean_loss != nullptr) *mean_loss = loss / batch.n;
  if (grads != nullptr) *grads = grads_;
  return Status::Ok();
}

}  // namespace rf
