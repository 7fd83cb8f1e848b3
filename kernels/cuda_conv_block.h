// CudaConvBlock: one conv block of the model (model/model.h) on the GPU, through cuDNN's legacy
// API: 3x3 convolution with padding 1 -> + bias -> ReLU -> 2x2 max-pool with stride 2, rounding
// down; and its backward pass (pooling, ReLU, bias, filter, data). With batch_norm, batch
// normalization sits between the convolution and the ReLU, the bias as its shift. Two data
// layouts:
//   float32  NCHW float tensors; bias, ReLU and pooling through cuDNN (cudnnAddTensor, ReLU in
//            place, cudnnPoolingForward), so `act` holds ReLU(conv(x) + bias). With batch norm,
//            cuDNN's spatial batch normalization (cudnnBatchNormalization*) reads `act` =
//            conv(x) and writes `norm`, which then holds ReLU(BN(act)).
//   bf16     NHWC bfloat16 activations and a bf16 [K][3][3][C] filter, float accumulation on the
//            tensor cores; bias, ReLU and pooling in one pass of our own
//            (kernels/cuda_bf16_kernels.cuh), so `act` holds conv(x) alone and the backward pass
//            recomputes ReLU and the window maxima from it. Batch norm folds into that pass as a
//            per-channel gain and shift, after one pass of our own for the batch statistics
//            (cuDNN's would be a pass of its own writing a normalized copy for the tail to read).
//
// Why the legacy API: it is deprecated in cuDNN 9 but present in every 9.x (9.14 on the GPU
// machine, 9.19 where we build), needs no graph building, and each call is one kernel or a few,
// which keeps the step easy to read and to capture in a CUDA graph.
//
// Algorithms are chosen once, by FindAlgorithms at the backend's max_batch: cuDNN times every
// algorithm on the real buffers (cudnnFindConvolution*AlgorithmEx) and the fastest that fits the
// workspace limit wins (deterministic float32 takes cuDNN's heuristic order instead, which is
// the same in every process, where timings are not), with two rules:
//   - tf32 off: the descriptors stay in CUDNN_FMA_MATH, so no algorithm may use TF32 tensor ops;
//     tf32 on: each direction runs in the math type cuDNN measured it with.
//   - deterministic: among the backward algorithms only those cuDNN reports as deterministic are
//     taken (the fastest non-deterministic one only if none works, which Describe() says).
// For another batch size n, SetBatch keeps those algorithms where cuDNN accepts them at n within
// the workspace, and otherwise asks cuDNN's heuristics (cudnnGet*Algorithm_v7, host only) for the
// best that fits, under the same rules. Nothing here allocates device memory after creation.
//
// Thread safety: none. Buffers are owned by the caller (the backend) and sized for max_batch.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "core/status.h"
#include "kernels/cuda_bf16_kernels.cuh"
#include "kernels/dnn_handles.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // see kernels/dnn_handles.h

namespace rf::cuda {

class CudaConvBlock {
 public:
  struct Shape {
    uint32_t in_channels = 0, out_channels = 0;
    uint32_t height = 0, width = 0;  // of the input; the output is height / 2 x width / 2
  };

  // Device pointers for one call, each sized for max_batch. Activations are float NCHW
  // ([n][C][H][W]) or, in bf16 mode, bfloat16 NHWC ([n][H][W][C]); the filter and its gradient
  // float [out][in][3][3] or bf16 [out][3][3][in]; bias and bias gradient always float.
  struct Buffers {
    const void* x = nullptr;        // the block's input, in channels
    const void* weight = nullptr;   // the filter
    const float* bias = nullptr;    // [out]
    void* act = nullptr;            // float: ReLU(conv(x) + bias); bf16: conv(x)
    void* pooled = nullptr;         // [n][out][H/2][W/2] (or NHWC)
    void* pooled_grad = nullptr;    // gradient w.r.t. pooled, written by the layer above
    void* act_grad = nullptr;       // scratch for the gradient w.r.t. act
    void* weight_grad = nullptr;    // the filter's gradient
    float* bias_grad = nullptr;     // [out]
    float* bias_partial = nullptr;  // bf16 mode: scratch of BiasGradPartials(out) floats
                                    // (BatchNormPartials(out) with batch norm)
    void* x_grad = nullptr;         // gradient w.r.t. x; null where nothing needs it (block 0)

    // With batch_norm only; each [out] floats unless said otherwise.
    const float* bn_scale = nullptr;  // the scale parameter (the bias is the shift)
    float* bn_scale_grad = nullptr;
    // [4][out]: the training forward's batch mean and 1 / sqrt(var + eps), for its backward
    // pass; then, in bf16 mode, the per-channel gain and shift the tail applies.
    float* bn_saved = nullptr;
    // Training: the targets of the running statistics' update (the batch's mean and unbiased
    // variance), which the caller applies once the step is known to be finite.
    float* bn_batch_mean = nullptr;
    float* bn_batch_var = nullptr;
    const float* bn_running_mean = nullptr;  // evaluation normalizes by these
    const float* bn_running_var = nullptr;
    void* norm = nullptr;  // float32 mode: [n][out][H][W], ReLU(BN(act))
  };

  // tf32: float32 mode may use TF32 tensor ops. bf16: the bf16 NHWC layout (tensor ops always).
  // batch_norm: batch normalization after the convolution (model/model.h).
  static Result<CudaConvBlock> Create(const Shape& shape, bool tf32, bool deterministic,
                                      bool bf16 = false, bool batch_norm = false);

  // Benchmarks the algorithms at max_batch (SetBatch(max_batch) must have run) and keeps the
  // fastest of each direction that needs at most `workspace_bytes`. Writes act, pooled, weight
  // and x gradients (the contents are garbage afterwards); `workspace` must hold workspace_bytes.
  Status FindAlgorithms(cudnnHandle_t cudnn, const Buffers& b, bool need_x_grad, void* workspace,
                        size_t workspace_bytes);
  // The workspace the chosen algorithms need at the batch size they were found for.
  size_t workspace_needed() const { return workspace_needed_; }

  // Sets every descriptor for batches of n and makes sure the algorithms in use run at n within
  // workspace_bytes (see the file comment). Host calls only; cheap, but the backend calls it only
  // when n changes.
  Status SetBatch(cudnnHandle_t cudnn, uint32_t n, size_t workspace_bytes);

  // Queue the forward / backward pass for the batch size of the last SetBatch on the handle's
  // stream. With batch norm, `training` normalizes by the batch's statistics (and writes
  // bn_saved, bn_batch_mean and bn_batch_var), else by the running ones; Backward follows a
  // training Forward of the same batch.
  Status Forward(cudnnHandle_t cudnn, const Buffers& b, void* workspace, size_t workspace_bytes,
                 bool training = true) const;
  Status Backward(cudnnHandle_t cudnn, const Buffers& b, void* workspace,
                  size_t workspace_bytes) const;

  bool bf16() const { return bf16_; }

  // "conv 3->32 @32x32 n=256: fwd IMPLICIT_PRECOMP_GEMM (tensor ops), bwd-filter ALGO_1".
  std::string Describe() const;

 private:
  // One direction's choice and the math type it runs in.
  template <typename Algo>
  struct Choice {
    Algo algo{};
    cudnnMathType_t math = CUDNN_FMA_MATH;
    bool deterministic = true;
  };

  // What FindAlgorithms chose, per device, shape and settings, for the life of the process.
  // cuDNN's timings vary from run to run, so without it two backends in one process could pick
  // different algorithms for one convolution, and the same batches would no longer give the same
  // bits in both. Guarded by a mutex in the .cc.
  using FoundKey = std::tuple<int, uint32_t, uint32_t, uint32_t, uint32_t, uint32_t, bool, bool,
                              bool, bool, size_t>;
  struct Found {
    Choice<cudnnConvolutionFwdAlgo_t> fwd;
    Choice<cudnnConvolutionBwdFilterAlgo_t> filter;
    Choice<cudnnConvolutionBwdDataAlgo_t> data;
    size_t workspace = 0;
  };
  static std::map<FoundKey, Found>& FoundCache();

  CudaConvBlock() = default;
  Status ApplyMath();
  // Tensor-op math allowed: TF32 in float32 mode, always in bf16 mode.
  bool tensor_ops() const { return tf32_ || bf16_; }
  Status FitToBatch(cudnnHandle_t cudnn, size_t workspace_bytes);
  // cuDNN's heuristic order for one direction at the current n (host only, no timing: the same
  // in every process), under the math type algorithms are searched under.
  Status Heuristic(cudnnHandle_t cudnn, cudnnConvolutionFwdAlgoPerf_t* perf, int* count);
  Status Heuristic(cudnnHandle_t cudnn, cudnnConvolutionBwdFilterAlgoPerf_t* perf, int* count);
  Status Heuristic(cudnnHandle_t cudnn, cudnnConvolutionBwdDataAlgoPerf_t* perf, int* count);
  // The filter and data gradients, from `grad` (the gradient w.r.t. conv(x)).
  Status BackwardConv(cudnnHandle_t cudnn, const Buffers& b, const void* grad, void* workspace,
                      size_t workspace_bytes) const;
  // bf16 mode: the per-channel map the fused tail applies (the bias alone without batch norm).
  ChannelAffine TailAffine(const Buffers& b) const;
  Status ForwardBf16(cudnnHandle_t cudnn, const Buffers& b, bool training) const;
  Status BackwardBf16(cudnnHandle_t cudnn, const Buffers& b, void* workspace,
                      size_t workspace_bytes) const;
  cudnnTensorFormat_t layout() const { return bf16_ ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW; }
  cudnnDataType_t data_type() const { return bf16_ ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT; }
  // The math type algorithms are searched under.
  cudnnMathType_t search_math() const {
    return bf16_ ? CUDNN_TENSOR_OP_MATH : tf32_ ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  }

  Shape shape_;
  bool tf32_ = false, deterministic_ = true, bf16_ = false, batch_norm_ = false;
  bool need_x_grad_ = true;
  bool found_ = false;  // FindAlgorithms has run
  uint32_t n_ = 0;
  TensorDesc x_desc_, act_desc_, pooled_desc_, bias_desc_;
  TensorDesc bn_desc_;  // float32 batch norm: its scale, shift and statistics, derived from act
  FilterDesc w_desc_;
  ConvDesc fwd_conv_, data_conv_, filter_conv_;  // one per direction: each has its own math type
  ActivationDesc relu_;
  PoolingDesc pool_;
  // Found at max_batch, and in use for the current n (equal unless n needed others).
  Choice<cudnnConvolutionFwdAlgo_t> fwd_found_, fwd_;
  Choice<cudnnConvolutionBwdDataAlgo_t> data_found_, data_;
  Choice<cudnnConvolutionBwdFilterAlgo_t> filter_found_, filter_;
  size_t workspace_needed_ = 0;
};

}  // namespace rf::cuda

#pragma GCC diagnostic pop
