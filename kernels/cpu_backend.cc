#include "kernels/cpu_backend.h"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

namespace rf {
namespace {

// Checks that `t` holds one tensor per ParameterShapes(c) entry, each of the right size.
Status CheckShapes(const ModelConfig& c, const Tensors& t, const char* what) {
  const std::vector<ParamShape> shapes = ParameterShapes(c);
  if (t.t.size() != shapes.size()) {
    return Status::InvalidArgument(std::string(what) + " has " + std::to_string(t.t.size()) +
                                   " tensors; the model has " + std::to_string(shapes.size()));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (t.t[i].size() != shapes[i].count()) {
      return Status::InvalidArgument(std::string(what) + " tensor " + shapes[i].name + " has " +
                                     std::to_string(t.t[i].size()) + " values; expected " +
                                     std::to_string(shapes[i].count()));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CpuBackend>> CpuBackend::Create(const ModelConfig& config,
                                                       const Normalization& norm,
                                                       uint32_t max_batch,
                                                       const Tensors& initial_params) {
  RF_RETURN_IF_ERROR(config.Validate());
  if (max_batch == 0) return Status::InvalidArgument("the CPU backend needs max_batch >= 1");
  // OpenBLAS takes int sizes; the widest matrix is the first block's col, pixels columns wide.
  if (uint64_t{max_batch} * config.height * config.width > INT_MAX) {
    return Status::InvalidArgument("max_batch " + std::to_string(max_batch) +
                                   " is too large for the CPU backend at this input size");
  }
  if (norm.mean.size() != config.channels || norm.stddev.size() != config.channels) {
    return Status::InvalidArgument("normalization has " + std::to_string(norm.mean.size()) +
                                   " means and " + std::to_string(norm.stddev.size()) +
                                   " stds; the input has " + std::to_string(config.channels) +
                                   " channels");
  }
  RF_RETURN_IF_ERROR(CheckShapes(config, initial_params, "initial parameters"));
  return std::unique_ptr<CpuBackend>(new CpuBackend(config, norm, max_batch, initial_params));
}

CpuBackend::CpuBackend(const ModelConfig& config, const Normalization& norm, uint32_t max_batch,
                       const Tensors& initial_params)
    : config_(config),
      mean_(norm.mean),
      stddev_(norm.stddev),
      max_batch_(max_batch),
      flat_(config.FlatFeatures()),
      params_(initial_params),
      momentum_(ZerosLike(config)),
      grads_(ZerosLike(config)) {
  for (float& s : stddev_) {
    if (s == 0.f) s = 1.f;  // a constant channel: centre it, do not divide by zero
  }
  const size_t b = max_batch;
  input_.resize(b * config.channels * config.height * config.width);
  labels_.resize(b);
  size_t col_size = 0;
  uint32_t in = config.channels;
  for (size_t i = 0; i < config.conv.size(); ++i) {
    Block blk;
    blk.shape = {in, config.conv[i], max_batch, config.HeightAfter(static_cast<int>(i) - 1),
                 config.WidthAfter(static_cast<int>(i) - 1)};
    const size_t out = blk.shape.out_channels * blk.shape.pixels();
    const size_t pooled = b * blk.shape.out_channels * config.HeightAfter(static_cast<int>(i)) *
                          config.WidthAfter(static_cast<int>(i));
    blk.out.resize(out);
    blk.out_grad.resize(out);
    blk.pooled.resize(pooled);
    blk.pooled_grad.resize(pooled);
    blk.argmax.resize(pooled);
    col_size = std::max(col_size, blk.shape.col_size());
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
}

Status CpuBackend::CheckBatch(const BatchRef& batch) const {
  if (batch.n == 0 || batch.n > max_batch_) {
    return Status::InvalidArgument("batch of " + std::to_string(batch.n) +
                                   " samples; the CPU backend takes 1 to " +
                                   std::to_string(max_batch_));
  }
  if (batch.samples == nullptr || batch.labels == nullptr) {
    return Status::InvalidArgument("batch without samples or labels");
  }
  if (!IsSampleDType(batch.dtype)) {
    return Status::InvalidArgument("samples of type " + std::string(DTypeName(batch.dtype)) +
                                   " are not a sample type");
  }
  if (!IsLabelDType(batch.label_dtype)) {
    return Status::InvalidArgument("labels of type " + std::string(DTypeName(batch.label_dtype)) +
                                   " are not a label type");
  }
  for (uint32_t i = 0; i < batch.n; ++i) {
    const int64_t label = LoadLabel(batch.label_dtype, batch.labels, i);
    if (label < 0 || label >= config_.classes) {
      return Status::InvalidArgument("label " + std::to_string(label) + " of sample " +
                                     std::to_string(i) + " in the batch is outside [0, " +
                                     std::to_string(config_.classes) + ")");
    }
  }
  return Status::Ok();
}

void CpuBackend::LoadBatch(const BatchRef& batch) {
  const size_t n = batch.n, plane = size_t{config_.height} * config_.width;
  for (size_t img = 0; img < n; ++img) {
    for (size_t c = 0; c < config_.channels; ++c) {
      const size_t src = (img * config_.channels + c) * plane;
      float* dst = input_.data() + (c * n + img) * plane;
      for (size_t p = 0; p < plane; ++p) {
        dst[p] = (LoadAsFloat(batch.dtype, batch.samples, src + p) - mean_[c]) / stddev_[c];
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    labels_[i] = static_cast<int32_t>(LoadLabel(batch.label_dtype, batch.labels, i));
  }
}

double CpuBackend::Forward(uint32_t n, uint64_t* correct) {
  const float* in = input_.data();
  for (size_t b = 0; b < blocks_.size(); ++b) {
    Block& blk = blocks_[b];
    blk.shape.n = n;
    const cpu::ConvShape& s = blk.shape;
    cpu::Im2Col(s, in, col_.data());
    cpu::Gemm(false, false, s.out_channels, s.pixels(), s.col_rows(),
              params_.t[ConvWeight(b)].data(), col_.data(), 0.f, blk.out.data());
    cpu::BiasReluMaxPool(s.out_channels, n, s.height, s.width, blk.out.data(),
                         params_.t[ConvBias(b)].data(), blk.pooled.data(), blk.argmax.data());
    in = blk.pooled.data();
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

  cpu::Gemm(false, true, n, config_.hidden, flat_, flat_rows_.data(), params_.t[Fc1Weight()].data(),
            0.f, hidden_.data());
  cpu::AddColumnBias(n, config_.hidden, params_.t[Fc1Bias()].data(), true, hidden_.data());
  cpu::Gemm(false, true, n, config_.classes, config_.hidden, hidden_.data(),
            params_.t[Fc2Weight()].data(), 0.f, logits_.data());
  cpu::AddColumnBias(n, config_.classes, params_.t[Fc2Bias()].data(), false, logits_.data());
  return cpu::SoftmaxCrossEntropy(n, config_.classes, logits_.data(), labels_.data(), 1.f / n,
                                  logits_grad_.data(), correct);
}

void CpuBackend::Backward(uint32_t n) {
  // fc2, then its input's ReLU.
  cpu::Gemm(true, false, config_.classes, config_.hidden, n, logits_grad_.data(), hidden_.data(),
            0.f, grads_.t[Fc2Weight()].data());
  cpu::SumColumns(n, config_.classes, logits_grad_.data(), grads_.t[Fc2Bias()].data());
  cpu::Gemm(false, false, n, config_.hidden, config_.classes, logits_grad_.data(),
            params_.t[Fc2Weight()].data(), 0.f, hidden_grad_.data());
  cpu::ReluBackward(size_t{n} * config_.hidden, hidden_.data(), hidden_grad_.data());

  // fc1, and its input gradient back into the last block's CNHW layout.
  cpu::Gemm(true, false, config_.hidden, flat_, n, hidden_grad_.data(), flat_rows_.data(), 0.f,
            grads_.t[Fc1Weight()].data());
  cpu::SumColumns(n, config_.hidden, hidden_grad_.data(), grads_.t[Fc1Bias()].data());
  cpu::Gemm(false, false, n, flat_, config_.hidden, hidden_grad_.data(),
            params_.t[Fc1Weight()].data(), 0.f, flat_grad_.data());
  Block& last = blocks_.back();
  const size_t area = flat_ / last.shape.out_channels;
  for (size_t c = 0; c < last.shape.out_channels; ++c) {
    for (size_t img = 0; img < n; ++img) {
      std::copy_n(flat_grad_.data() + img * flat_ + c * area, area,
                  last.pooled_grad.data() + (c * n + img) * area);
    }
  }

  for (size_t b = blocks_.size(); b-- > 0;) {
    Block& blk = blocks_[b];
    const cpu::ConvShape& s = blk.shape;
    cpu::BiasReluMaxPoolBackward(s.out_channels, n, s.height, s.width, blk.pooled.data(),
                                 blk.pooled_grad.data(), blk.argmax.data(), blk.out_grad.data(),
                                 grads_.t[ConvBias(b)].data());
    // The forward pass's col was overwritten by later blocks: rebuild it (cheap next to the
    // sgemm) rather than keep one per block.
    const float* in = b == 0 ? input_.data() : blocks_[b - 1].pooled.data();
    cpu::Im2Col(s, in, col_.data());
    cpu::Gemm(false, true, s.out_channels, s.col_rows(), s.pixels(), blk.out_grad.data(),
              col_.data(), 0.f, grads_.t[ConvWeight(b)].data());
    if (b == 0) break;  // nothing needs the gradient of the input
    cpu::Gemm(true, false, s.col_rows(), s.pixels(), s.out_channels,
              params_.t[ConvWeight(b)].data(), blk.out_grad.data(), 0.f, col_.data());
    cpu::Col2Im(s, col_.data(), blocks_[b - 1].pooled_grad.data());
  }
}

Status CpuBackend::TrainStep(const BatchRef& batch, const SgdConfig& sgd) {
  RF_RETURN_IF_ERROR(CheckBatch(batch));
  LoadBatch(batch);
  uint64_t correct = 0;
  const double loss = Forward(batch.n, &correct);
  Backward(batch.n);
  // torch.optim.SGD (dampening 0, no Nesterov): g += wd * w; v = momentum * v + g; w -= lr * v.
  for (size_t t = 0; t < params_.t.size(); ++t) {
    float* w = params_.t[t].data();
    float* v = momentum_.t[t].data();
    const float* g = grads_.t[t].data();
    for (size_t i = 0; i < params_.t[t].size(); ++i) {
      const float gi = g[i] + sgd.weight_decay * w[i];
      v[i] = sgd.momentum * v[i] + gi;
      w[i] -= sgd.lr * v[i];
    }
  }
  train_stats_.loss_sum += loss;
  train_stats_.correct += correct;
  train_stats_.samples += batch.n;
  return Status::Ok();
}

Status CpuBackend::Evaluate(const BatchRef& batch) {
  RF_RETURN_IF_ERROR(CheckBatch(batch));
  LoadBatch(batch);
  uint64_t correct = 0;
  eval_stats_.loss_sum += Forward(batch.n, &correct);
  eval_stats_.correct += correct;
  eval_stats_.samples += batch.n;
  return Status::Ok();
}

StepStats CpuBackend::TakeTrainStats() { return std::exchange(train_stats_, StepStats{}); }
StepStats CpuBackend::TakeEvalStats() { return std::exchange(eval_stats_, StepStats{}); }

Status CpuBackend::GetState(Tensors* params, Tensors* momentum) {
  if (params != nullptr) *params = params_;
  if (momentum != nullptr) *momentum = momentum_;
  return Status::Ok();
}

Status CpuBackend::SetState(const Tensors& params, const Tensors& momentum) {
  RF_RETURN_IF_ERROR(CheckShapes(config_, params, "parameters"));
  RF_RETURN_IF_ERROR(CheckShapes(config_, momentum, "momentum"));
  for (size_t t = 0; t < params_.t.size(); ++t) {
    std::copy(params.t[t].begin(), params.t[t].end(), params_.t[t].begin());
    std::copy(momentum.t[t].begin(), momentum.t[t].end(), momentum_.t[t].begin());
  }
  return Status::Ok();
}

Status CpuBackend::ComputeGradients(const BatchRef& batch, double* mean_loss, Tensors* grads) {
  RF_RETURN_IF_ERROR(CheckBatch(batch));
  LoadBatch(batch);
  uint64_t correct = 0;
  const double loss = Forward(batch.n, &correct);
  Backward(batch.n);
  if (mean_loss != nullptr) *mean_loss = loss / batch.n;
  if (grads != nullptr) *grads = grads_;
  return Status::Ok();
}

}  // namespace rf
