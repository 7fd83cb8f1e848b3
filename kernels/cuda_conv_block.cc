#include "kernels/cuda_conv_block.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/cuda_bf16_kernels.cuh"
#include "kernels/dnn_check.h"
#include "model/model.h"

// Deprecated in cuDNN 9 but present in every 9.x: see kernels/cuda_conv_block.h.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace rf::cuda {
namespace {

const char* Name(cudnnConvolutionFwdAlgo_t a) {
  static const char* const kNames[] = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  const auto i = static_cast<size_t>(a);
  return i < std::size(kNames) ? kNames[i] : "?";
}
const char* Name(cudnnConvolutionBwdDataAlgo_t a) {
  static const char* const kNames[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                       "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  const auto i = static_cast<size_t>(a);
  return i < std::size(kNames) ? kNames[i] : "?";
}
const char* Name(cudnnConvolutionBwdFilterAlgo_t a) {
  static const char* const kNames[] = {
      "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
  const auto i = static_cast<size_t>(a);
  return i < std::size(kNames) ? kNames[i] : "?";
}

bool UsesTensorOps(cudnnMathType_t m) {
  return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// What Pick looks for in cuDNN's results, in order of preference.
struct Wanted {
  bool tensor_ops_allowed = false;    // else FMA math only (TF32 off)
  bool tensor_ops_preferred = false;  // bf16: cuDNN's non-tensor-op NHWC kernels are both
                                      // slow and imprecise (their weight gradients were 14%
                                      // off float32 at 16 x 32 x 32, H100, cuDNN 9.14)
  bool deterministic = true;
};

// The first (fastest, as cuDNN sorts them) result that ran, fits the workspace and keeps to FMA
// math where tensor ops are not allowed, taking on the first pass only tensor-op results where
// those are preferred and, on the first two, only deterministic ones where that is wanted.
template <typename Perf>
const Perf* Pick(const Perf* perf, int count, size_t workspace_bytes, const Wanted& want) {
  for (int pass = 0; pass < 3; ++pass) {
    for (int i = 0; i < count; ++i) {
      const Perf& p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > workspace_bytes) continue;
      if (!want.tensor_ops_allowed && UsesTensorOps(p.mathType)) continue;
      if (pass == 0 && want.tensor_ops_preferred && !UsesTensorOps(p.mathType)) continue;
      if (pass < 2 && want.deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
      return &p;
    }
  }
  return nullptr;
}

template <typename Choice, typename Perf>
void Take(const Perf& p, bool tensor_ops, Choice* c) {
  c->algo = p.algo;
  c->math = tensor_ops ? p.mathType : CUDNN_FMA_MATH;
  c->deterministic = p.determinism == CUDNN_DETERMINISTIC;
}

Status NoAlgorithm(const char* direction, const CudaConvBlock::Shape& s, uint32_t n,
                   size_t workspace_bytes) {
  return Status::Aborted("cuDNN has no " + std::string(direction) + " algorithm for conv " +
                         std::to_string(s.in_channels) + "->" + std::to_string(s.out_channels) +
                         " at " + std::to_string(s.height) + "x" + std::to_string(s.width) +
                         ", batch " + std::to_string(n) + ", within a workspace of " +
                         std::to_string(workspace_bytes) + " bytes");
}

int AsInt(uint32_t v) { return static_cast<int>(v); }

std::mutex g_found_mu;  // guards CudaConvBlock::FoundCache()

}  // namespace

std::map<CudaConvBlock::FoundKey, CudaConvBlock::Found>& CudaConvBlock::FoundCache() {
  static auto* cache = new std::map<FoundKey, Found>;  // never destroyed: no exit-order issues
  return *cache;
}

Result<CudaConvBlock> CudaConvBlock::Create(const Shape& shape, bool tf32, bool deterministic,
                                            bool bf16, bool batch_norm) {
  CudaConvBlock b;
  b.shape_ = shape;
  b.tf32_ = tf32;
  b.deterministic_ = deterministic;
  b.bf16_ = bf16;
  b.batch_norm_ = batch_norm;
  RF_ASSIGN_OR_RETURN(b.x_desc_, CreateTensorDesc());
  RF_ASSIGN_OR_RETURN(b.act_desc_, CreateTensorDesc());
  RF_ASSIGN_OR_RETURN(b.pooled_desc_, CreateTensorDesc());
  RF_ASSIGN_OR_RETURN(b.bias_desc_, CreateTensorDesc());
  RF_ASSIGN_OR_RETURN(b.bn_desc_, CreateTensorDesc());
  RF_ASSIGN_OR_RETURN(b.w_desc_, CreateFilterDesc());
  RF_ASSIGN_OR_RETURN(b.fwd_conv_, CreateConvDesc());
  RF_ASSIGN_OR_RETURN(b.data_conv_, CreateConvDesc());
  RF_ASSIGN_OR_RETURN(b.filter_conv_, CreateConvDesc());
  RF_ASSIGN_OR_RETURN(b.relu_, CreateActivationDesc());
  RF_ASSIGN_OR_RETURN(b.pool_, CreatePoolingDesc());

  RF_CUDA_CHECK(cudnnSetTensor4dDescriptor(b.bias_desc_.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                           1, AsInt(shape.out_channels), 1, 1));
  RF_CUDA_CHECK(cudnnSetFilter4dDescriptor(b.w_desc_.get(), b.data_type(), b.layout(),
                                           AsInt(shape.out_channels), AsInt(shape.in_channels), 3,
                                           3));
  // Cross-correlation, as the model (and the CPU backend's im2col) defines the convolution.
  for (cudnnConvolutionDescriptor_t d :
       {b.fwd_conv_.get(), b.data_conv_.get(), b.filter_conv_.get()}) {
    RF_CUDA_CHECK(cudnnSetConvolution2dDescriptor(d, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                  CUDNN_DATA_FLOAT));
    // Until algorithms are found: FMA only without TF32; with it, cuDNN's default for float,
    // which lets Find time the TF32 tensor-op algorithms too; bf16 runs on tensor ops.
    RF_CUDA_CHECK(cudnnSetConvolutionMathType(d, b.search_math()));
  }
  RF_CUDA_CHECK(cudnnSetActivationDescriptor(b.relu_.get(), CUDNN_ACTIVATION_RELU,
                                             CUDNN_NOT_PROPAGATE_NAN, 0.0));
  // The windows do not overlap, so each input feeds at most one output; the deterministic mode
  // also fixes which of equal maxima receives the gradient.
  RF_CUDA_CHECK(cudnnSetPooling2dDescriptor(
      b.pool_.get(), deterministic ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_MAX,
      CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));
  return b;
}

Status CudaConvBlock::SetBatch(cudnnHandle_t cudnn, uint32_t n, size_t workspace_bytes) {
  const Shape& s = shape_;
  RF_CUDA_CHECK(cudnnSetTensor4dDescriptor(x_desc_.get(), layout(), data_type(), AsInt(n),
                                           AsInt(s.in_channels), AsInt(s.height), AsInt(s.width)));
  RF_CUDA_CHECK(cudnnSetTensor4dDescriptor(act_desc_.get(), layout(), data_type(), AsInt(n),
                                           AsInt(s.out_channels), AsInt(s.height), AsInt(s.width)));
  RF_CUDA_CHECK(cudnnSetTensor4dDescriptor(pooled_desc_.get(), layout(), data_type(), AsInt(n),
                                           AsInt(s.out_channels), AsInt(s.height / 2),
                                           AsInt(s.width / 2)));
  // cuDNN must agree with the model on both output sizes, or the buffers are the wrong size.
  int on = 0, oc = 0, oh = 0, ow = 0;
  RF_CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(fwd_conv_.get(), x_desc_.get(), w_desc_.get(),
                                                      &on, &oc, &oh, &ow));
  int pn = 0, pc = 0, ph = 0, pw = 0;
  RF_CUDA_CHECK(
      cudnnGetPooling2dForwardOutputDim(pool_.get(), act_desc_.get(), &pn, &pc, &ph, &pw));
  if (oh != AsInt(s.height) || ow != AsInt(s.width) || ph != AsInt(s.height / 2) ||
      pw != AsInt(s.width / 2)) {
    return Status::Aborted("cuDNN gives a conv output of " + std::to_string(oh) + "x" +
                           std::to_string(ow) + " pooled to " + std::to_string(ph) + "x" +
                           std::to_string(pw) + " for a " + std::to_string(s.height) + "x" +
                           std::to_string(s.width) + " input; the model needs the same size, " +
                           "pooled to half (rounded down)");
  }
  if (batch_norm_ && !bf16_) {
    RF_CUDA_CHECK(
        cudnnDeriveBNTensorDescriptor(bn_desc_.get(), act_desc_.get(), CUDNN_BATCHNORM_SPATIAL));
  }
  n_ = n;
  if (!found_) return Status::Ok();  // before FindAlgorithms: descriptors only
  return FitToBatch(cudnn, workspace_bytes);
}

Status CudaConvBlock::FindAlgorithms(cudnnHandle_t cudnn, const Buffers& b, bool need_x_grad,
                                     void* workspace, size_t workspace_bytes) {
  need_x_grad_ = need_x_grad;
  int device = 0;
  RF_CUDA_CHECK(cudaGetDevice(&device));
  const FoundKey key{
      device, shape_.in_channels, shape_.out_channels, shape_.height,  shape_.width, n_, tf32_,
      bf16_,  deterministic_,     need_x_grad,         workspace_bytes};
  {
    std::lock_guard lock(g_found_mu);
    const auto it = FoundCache().find(key);
    if (it != FoundCache().end()) {
      const Found& f = it->second;
      fwd_found_ = fwd_ = f.fwd;
      filter_found_ = filter_ = f.filter;
      data_found_ = data_ = f.data;
      workspace_needed_ = f.workspace;
      found_ = true;
      return ApplyMath();
    }
  }
  // Timed (cudnnFind*Ex), except for deterministic float32, which takes the heuristics' order
  // (host only, the same in every process): timed, two tf32 runs of the same command chose
  // differently and ended at different weights (H200, 2026-11-26), and so did a resumed run.
  // bf16 keeps the timed search: its runs and resumptions reproduced bit for bit there.
  const bool timed = bf16_ || !deterministic_;
  int count = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  if (timed) {
    RF_CUDA_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
        cudnn, x_desc_.get(), b.x, w_desc_.get(), b.weight, fwd_conv_.get(), act_desc_.get(), b.act,
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, fwd, workspace, workspace_bytes));
  } else {
    RF_RETURN_IF_ERROR(Heuristic(cudnn, fwd, &count));
  }
  const auto* f = Pick(fwd, count, workspace_bytes, Wanted{tensor_ops(), bf16_, deterministic_});
  if (f == nullptr) return NoAlgorithm("forward", shape_, n_, workspace_bytes);
  Take(*f, tensor_ops(), &fwd_found_);
  workspace_needed_ = f->memory;

  cudnnConvolutionBwdFilterAlgoPerf_t filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  if (timed) {
    RF_CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(
        cudnn, x_desc_.get(), b.x, act_desc_.get(), b.act, filter_conv_.get(), w_desc_.get(),
        b.weight_grad, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, filter, workspace,
        workspace_bytes));
  } else {
    RF_RETURN_IF_ERROR(Heuristic(cudnn, filter, &count));
  }
  const auto* bf =
      Pick(filter, count, workspace_bytes, Wanted{tensor_ops(), bf16_, deterministic_});
  if (bf == nullptr) return NoAlgorithm("backward filter", shape_, n_, workspace_bytes);
  Take(*bf, tensor_ops(), &filter_found_);
  workspace_needed_ = std::max(workspace_needed_, bf->memory);

  if (need_x_grad) {
    cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    if (timed) {
      RF_CUDA_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(
          cudnn, w_desc_.get(), b.weight, act_desc_.get(), b.act, data_conv_.get(), x_desc_.get(),
          b.x_grad, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, data, workspace,
          workspace_bytes));
    } else {
      RF_RETURN_IF_ERROR(Heuristic(cudnn, data, &count));
    }
    const auto* bd =
        Pick(data, count, workspace_bytes, Wanted{tensor_ops(), bf16_, deterministic_});
    if (bd == nullptr) return NoAlgorithm("backward data", shape_, n_, workspace_bytes);
    Take(*bd, tensor_ops(), &data_found_);
    workspace_needed_ = std::max(workspace_needed_, bd->memory);
  }
  found_ = true;
  fwd_ = fwd_found_;
  filter_ = filter_found_;
  data_ = data_found_;
  {
    std::lock_guard lock(g_found_mu);
    FoundCache().emplace(key, Found{fwd_found_, filter_found_, data_found_, workspace_needed_});
  }
  return ApplyMath();
}

Status CudaConvBlock::ApplyMath() {
  RF_CUDA_CHECK(cudnnSetConvolutionMathType(fwd_conv_.get(), fwd_.math));
  RF_CUDA_CHECK(cudnnSetConvolutionMathType(filter_conv_.get(), filter_.math));
  RF_CUDA_CHECK(cudnnSetConvolutionMathType(data_conv_.get(), data_.math));
  return Status::Ok();
}

Status CudaConvBlock::Heuristic(cudnnHandle_t cudnn, cudnnConvolutionFwdAlgoPerf_t* perf,
                                int* count) {
  RF_CUDA_CHECK(cudnnSetConvolutionMathType(fwd_conv_.get(), search_math()));
  RF_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
      cudnn, x_desc_.get(), w_desc_.get(), fwd_conv_.get(), act_desc_.get(),
      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, count, perf));
  return Status::Ok();
}

Status CudaConvBlock::Heuristic(cudnnHandle_t cudnn, cudnnConvolutionBwdFilterAlgoPerf_t* perf,
                                int* count) {
  RF_CUDA_CHECK(cudnnSetConvolutionMathType(filter_conv_.get(), search_math()));
  RF_CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      cudnn, x_desc_.get(), act_desc_.get(), filter_conv_.get(), w_desc_.get(),
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, count, perf));
  return Status::Ok();
}

Status CudaConvBlock::Heuristic(cudnnHandle_t cudnn, cudnnConvolutionBwdDataAlgoPerf_t* perf,
                                int* count) {
  RF_CUDA_CHECK(cudnnSetConvolutionMathType(data_conv_.get(), search_math()));
  RF_CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
      cudnn, w_desc_.get(), act_desc_.get(), data_conv_.get(), x_desc_.get(),
      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, count, perf));
  return Status::Ok();
}

Status CudaConvBlock::FitToBatch(cudnnHandle_t cudnn, size_t workspace_bytes) {
  // The algorithms found at max_batch, where cuDNN takes them at this n within the workspace.
  fwd_ = fwd_found_;
  filter_ = filter_found_;
  data_ = data_found_;
  RF_RETURN_IF_ERROR(ApplyMath());
  size_t need = 0;
  if (cudnnGetConvolutionForwardWorkspaceSize(cudnn, x_desc_.get(), w_desc_.get(), fwd_conv_.get(),
                                              act_desc_.get(), fwd_.algo,
                                              &need) != CUDNN_STATUS_SUCCESS ||
      need > workspace_bytes) {
    int count = 0;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    RF_RETURN_IF_ERROR(Heuristic(cudnn, perf, &count));
    const auto* p = Pick(perf, count, workspace_bytes, Wanted{tensor_ops(), bf16_, deterministic_});
    if (p == nullptr) return NoAlgorithm("forward", shape_, n_, workspace_bytes);
    Take(*p, tensor_ops(), &fwd_);
  }
  if (cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn, x_desc_.get(), act_desc_.get(),
                                                     filter_conv_.get(), w_desc_.get(),
                                                     filter_.algo, &need) != CUDNN_STATUS_SUCCESS ||
      need > workspace_bytes) {
    int count = 0;
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    RF_RETURN_IF_ERROR(Heuristic(cudnn, perf, &count));
    const auto* p = Pick(perf, count, workspace_bytes, Wanted{tensor_ops(), bf16_, deterministic_});
    if (p == nullptr) return NoAlgorithm("backward filter", shape_, n_, workspace_bytes);
    Take(*p, tensor_ops(), &filter_);
  }
  if (need_x_grad_ && (cudnnGetConvolutionBackwardDataWorkspaceSize(
                           cudnn, w_desc_.get(), act_desc_.get(), data_conv_.get(), x_desc_.get(),
                           data_.algo, &need) != CUDNN_STATUS_SUCCESS ||
                       need > workspace_bytes)) {
    int count = 0;
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    RF_RETURN_IF_ERROR(Heuristic(cudnn, perf, &count));
    const auto* p = Pick(perf, count, workspace_bytes, Wanted{tensor_ops(), bf16_, deterministic_});
    if (p == nullptr) return NoAlgorithm("backward data", shape_, n_, workspace_bytes);
    Take(*p, tensor_ops(), &data_);
  }
  return ApplyMath();
}

ChannelAffine CudaConvBlock::TailAffine(const Buffers& b) const {
  if (!batch_norm_) return ChannelAffine{nullptr, b.bias};
  const uint32_t c = shape_.out_channels;
  return ChannelAffine{b.bn_saved + 2 * c, b.bn_saved + 3 * c};
}

Status CudaConvBlock::Forward(cudnnHandle_t cudnn, const Buffers& b, void* workspace,
                              size_t workspace_bytes, bool training) const {
  const float one = 1.f, zero = 0.f;
  RF_CUDA_CHECK(cudnnConvolutionForward(cudnn, &one, x_desc_.get(), b.x, w_desc_.get(), b.weight,
                                        fwd_conv_.get(), fwd_.algo, workspace, workspace_bytes,
                                        &zero, act_desc_.get(), b.act));
  if (bf16_) return ForwardBf16(cudnn, b, training);
  void* out = b.act;  // what ReLU and pooling work on
  if (batch_norm_) {
    const double eps = kBatchNormEps;
    if (training) {
      // cuDNN moves "running" statistics by a factor; at 1 they become this batch's (its mean
      // and unbiased variance), which the backend applies once the step is known to be finite.
      // Zeroed first: at factor 1 the old value is multiplied by 0, and a NaN left by a refused
      // step would survive that.
      cudaStream_t stream = nullptr;
      RF_CUDA_CHECK(cudnnGetStream(cudnn, &stream));
      const size_t bytes = size_t{shape_.out_channels} * sizeof(float);
      RF_CUDA_CHECK(cudaMemsetAsync(b.bn_batch_mean, 0, bytes, stream));
      RF_CUDA_CHECK(cudaMemsetAsync(b.bn_batch_var, 0, bytes, stream));
      RF_CUDA_CHECK(cudnnBatchNormalizationForwardTraining(
          cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, act_desc_.get(), b.act, act_desc_.get(),
          b.norm, bn_desc_.get(), b.bn_scale, b.bias, 1.0, b.bn_batch_mean, b.bn_batch_var, eps,
          b.bn_saved, b.bn_saved + shape_.out_channels));
    } else {
      RF_CUDA_CHECK(cudnnBatchNormalizationForwardInference(
          cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, act_desc_.get(), b.act, act_desc_.get(),
          b.norm, bn_desc_.get(), b.bn_scale, b.bias, b.bn_running_mean, b.bn_running_var, eps));
    }
    out = b.norm;
  } else {
    RF_CUDA_CHECK(
        cudnnAddTensor(cudnn, &one, bias_desc_.get(), b.bias, &one, act_desc_.get(), b.act));
  }
  // In place: cuDNN allows x == y with identical descriptors.
  RF_CUDA_CHECK(cudnnActivationForward(cudnn, relu_.get(), &one, act_desc_.get(), out, &zero,
                                       act_desc_.get(), out));
  RF_CUDA_CHECK(cudnnPoolingForward(cudnn, pool_.get(), &one, act_desc_.get(), out, &zero,
                                    pooled_desc_.get(), b.pooled));
  return Status::Ok();
}

Status CudaConvBlock::ForwardBf16(cudnnHandle_t cudnn, const Buffers& b, bool training) const {
  cudaStream_t stream = nullptr;
  RF_CUDA_CHECK(cudnnGetStream(cudnn, &stream));
  const Shape& s = shape_;
  if (batch_norm_ && training) {
    RF_CUDA_CHECK(BatchNormStatsBf16(n_, s.height, s.width, s.out_channels, b.act, b.bn_scale,
                                     b.bias, b.bias_partial, b.bn_saved, b.bn_batch_mean,
                                     b.bn_batch_var, stream));
  } else if (batch_norm_) {
    RF_CUDA_CHECK(BatchNormRunningAffineBf16(s.out_channels, b.bn_scale, b.bias, b.bn_running_mean,
                                             b.bn_running_var, b.bn_saved, stream));
  }
  RF_CUDA_CHECK(BiasReluPoolBf16(n_, s.height, s.width, s.out_channels, b.act, TailAffine(b),
                                 b.pooled, stream));
  return Status::Ok();
}

Status CudaConvBlock::Backward(cudnnHandle_t cudnn, const Buffers& b, void* workspace,
                               size_t workspace_bytes) const {
  if (bf16_) return BackwardBf16(cudnn, b, workspace, workspace_bytes);
  const float one = 1.f, zero = 0.f;
  // What ReLU and pooling worked on: act, or with batch norm its output.
  const void* out = batch_norm_ ? b.norm : b.act;
  // Pooling's gradient goes to each window's maximum; the dropped odd row/column gets zero.
  RF_CUDA_CHECK(cudnnPoolingBackward(cudnn, pool_.get(), &one, pooled_desc_.get(), b.pooled,
                                     pooled_desc_.get(), b.pooled_grad, act_desc_.get(), out, &zero,
                                     act_desc_.get(), b.act_grad));
  // ReLU's input was overwritten by its output; for ReLU that is enough (x > 0 exactly where
  // y > 0), so the output is passed as both. In place on the gradient, which cuDNN allows.
  RF_CUDA_CHECK(cudnnActivationBackward(cudnn, relu_.get(), &one, act_desc_.get(), out,
                                        act_desc_.get(), b.act_grad, act_desc_.get(), out, &zero,
                                        act_desc_.get(), b.act_grad));
  if (!batch_norm_) {
    RF_CUDA_CHECK(cudnnConvolutionBackwardBias(cudnn, &one, act_desc_.get(), b.act_grad, &zero,
                                               bias_desc_.get(), b.bias_grad));
    return BackwardConv(cudnn, b, b.act_grad, workspace, workspace_bytes);
  }
  // Through the normalization, into `norm` (its values are spent): the gradients of x = act,
  // of the scale and of the shift (the bias), with the batch statistics the forward pass saved.
  RF_CUDA_CHECK(cudnnBatchNormalizationBackward(
      cudnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, act_desc_.get(), b.act,
      act_desc_.get(), b.act_grad, act_desc_.get(), b.norm, bn_desc_.get(), b.bn_scale,
      b.bn_scale_grad, b.bias_grad, static_cast<double>(kBatchNormEps), b.bn_saved,
      b.bn_saved + shape_.out_channels));
  return BackwardConv(cudnn, b, b.norm, workspace, workspace_bytes);
}

Status CudaConvBlock::BackwardBf16(cudnnHandle_t cudnn, const Buffers& b, void* workspace,
                                   size_t workspace_bytes) const {
  cudaStream_t stream = nullptr;
  RF_CUDA_CHECK(cudnnGetStream(cudnn, &stream));
  const Shape& s = shape_;
  RF_CUDA_CHECK(PoolReluBackwardBf16(n_, s.height, s.width, s.out_channels, b.act, TailAffine(b),
                                     b.pooled_grad, b.act_grad, b.bias_partial, b.bias_grad,
                                     stream));
  if (batch_norm_) {
    RF_CUDA_CHECK(BatchNormBackwardBf16(n_, s.height, s.width, s.out_channels, b.act, b.bn_saved,
                                        b.bn_scale, b.bias_grad, b.act_grad, b.bias_partial,
                                        b.bn_scale_grad, stream));
  }
  return BackwardConv(cudnn, b, b.act_grad, workspace, workspace_bytes);
}

Status CudaConvBlock::BackwardConv(cudnnHandle_t cudnn, const Buffers& b, const void* grad,
                                   void* workspace, size_t workspace_bytes) const {
  const float one = 1.f, zero = 0.f;
  RF_CUDA_CHECK(cudnnConvolutionBackwardFilter(
      cudnn, &one, x_desc_.get(), b.x, act_desc_.get(), grad, filter_conv_.get(), filter_.algo,
      workspace, workspace_bytes, &zero, w_desc_.get(), b.weight_grad));
  if (b.x_grad != nullptr) {
    RF_CUDA_CHECK(cudnnConvolutionBackwardData(
        cudnn, &one, w_desc_.get(), b.weight, act_desc_.get(), grad, data_conv_.get(), data_.algo,
        workspace, workspace_bytes, &zero, x_desc_.get(), b.x_grad));
  }
  return Status::Ok();
}

std::string CudaConvBlock::Describe() const {
  // DEFAULT_MATH lets cuDNN use TF32 on Ampere and later; FMA_MATH never does.
  auto math = [](cudnnMathType_t m) {
    return UsesTensorOps(m) ? " (tensor ops)" : m == CUDNN_DEFAULT_MATH ? " (default math)" : "";
  };
  auto nondet = [](bool d) { return d ? "" : " (non-deterministic)"; };
  std::string s = std::string(bf16_ ? "bf16 NHWC " : "") + (batch_norm_ ? "batch-norm " : "") +
                  "conv " + std::to_string(shape_.in_channels) + "->" +
                  std::to_string(shape_.out_channels) + " @" + std::to_string(shape_.height) + "x" +
                  std::to_string(shape_.width) + " n=" + std::to_string(n_) + ": fwd " +
                  Name(fwd_.algo) + math(fwd_.math) + ", bwd-filter " + Name(filter_.algo) +
                  math(filter_.math) + nondet(filter_.deterministic);
  if (need_x_grad_) {
    s += std::string(", bwd-data ") + Name(data_.algo) + math(data_.math) +
         nondet(data_.deterministic);
  }
  return s;
}

}  // namespace rf::cuda
