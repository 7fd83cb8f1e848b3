// The CPU backend's layer primitives: plain functions over caller-owned float buffers, so the
// backend owns every allocation and a step allocates nothing.
//
// Layout. Convolution activations are stored channel-major across the batch, [C][N][H][W]
// ("CNHW"), rather than NCHW: then a block's convolution over the whole batch is one sgemm,
//   Y[Cout, N*H*W] = W[Cout, Cin*9] x col[Cin*9, N*H*W],
// with no transpose of its result. Only the backend's edges (the input, and the gather into the
// fully connected layer's [N, C*H*W] rows) see another layout.
//
// Determinism: every function here is a fixed sequence of float operations for given sizes (no
// threads, OpenBLAS pinned to one thread by the backend, reductions in a fixed order), so the same
// inputs give bit-identical outputs on any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rf::cpu {

// One 3x3, padding 1, stride 1 convolution over n images of a CNHW tensor that stores `stride`
// images per channel (the whole batch; a call may cover a chunk of it). Pointers passed with a
// ConvShape point at the chunk's first image in channel 0 (or first column of row 0, for col);
// channels and col rows are stride * height * width floats apart.
struct ConvShape {
  uint32_t in_channels = 0, out_channels = 0;
  uint32_t n = 0, height = 0, width = 0;  // output height/width equal the input's
  uint32_t stride = 0;                    // images per channel in memory, >= n

  size_t pixels() const { return size_t{n} * height * width; }   // columns this call covers
  size_t ld() const { return size_t{stride} * height * width; }  // leading dim of col, Y
  size_t col_rows() const { return size_t{in_channels} * 9; }    // rows of col: (ci, kh, kw)
};

// C = op(A) x op(B) + beta * C, row-major, with single-threaded OpenBLAS sgemm; op transposes
// when its flag is set. A is m x k after op, B is k x n after op, C is m x n; lda, ldb, ldc are
// the row lengths as stored.
void Gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, const float* a, size_t lda,
          const float* b, size_t ldb, float beta, float* c, size_t ldc);

// Makes every OpenBLAS call run on its calling thread alone. Process-wide: OpenBLAS's own
// threading splits work by its thread count, which would make results depend on it.
void UseSingleThreadedBlas();

// col[(ci*9 + kh*3 + kw), (img, y, x)] = in[ci, img, y + kh - 1, x + kw - 1], zero outside.
void Im2Col(const ConvShape& s, const float* in, float* col);
// The adjoint of Im2Col: in_grad = sum of col_grad entries over every place Im2Col read from.
// Overwrites in_grad (it need not be zeroed first).
void Col2Im(const ConvShape& s, const float* col_grad, float* in_grad);

// Row-major [rows, cols] data whose bias runs along the columns (fully connected layers):
// y[r, c] += bias[c], then ReLU if `relu`; and bias_grad[c] = sum over rows of g[r, c] (in
// double, in row order).
void AddColumnBias(size_t rows, size_t cols, const float* bias, bool relu, float* y);
void SumColumns(size_t rows, size_t cols, const float* g, float* bias_grad);
// grad[i] = 0 where the ReLU output out[i] is not positive (its derivative there is taken as 0).
void ReluBackward(size_t count, const float* out, float* grad);

// The tail of a conv block, fused so the large pre-pool tensor is read once: for CNHW `conv`
// (channels x n planes of h x w, before the bias),
//   pooled = ReLU(max over each 2x2 window (stride 2, rounding down) + bias[channel]).
// Because the bias is constant over a plane and ReLU is monotonic, this equals pooling after
// bias and ReLU. argmax receives each window's maximum as an index within its plane (the first of
// equal values in row-major window order).
// Planes are (channel, image), channel-major with `stride` images per channel; the call covers
// images [0, n) of each channel, counted from the pointers passed.
void BiasReluMaxPool(uint32_t channels, uint32_t n, uint32_t stride, uint32_t h, uint32_t w,
                     const float* conv, const float* bias, float* pooled, uint32_t* argmax);
// Its backward pass: conv_grad (channels x n x h x w) = pooled_grad routed to each window's
// argmax where the pooled output is positive (ReLU's derivative, taken as 0 at 0), zero elsewhere
// (including the row and column that rounding down drops); bias_grad_sum[c] = the sum of what
// was routed in channel c (in double, in a fixed order).
void BiasReluMaxPoolBackward(uint32_t channels, uint32_t n, uint32_t stride, uint32_t h, uint32_t w,
                             const float* pooled, const float* pooled_grad, const uint32_t* argmax,
                             float* conv_grad, double* bias_grad_sum);

// Batch normalization of one channel's m values x (contiguous: a CNHW channel over the batch).
// Training: *mean and *var receive the values' mean and biased variance (sums in double, in
// order). Then, with those (training) or the given running ones (evaluation), Apply writes
//   z[i] = scale * (x[i] - mean) * invstd,  invstd = 1 / sqrt(var + eps)
// (the shift is the conv block's bias, added by BiasReluMaxPool) and returns invstd.
void BatchNormChannelStats(size_t m, const float* x, float* mean, float* var);
float BatchNormChannelApply(size_t m, const float* x, float mean, float var, float scale, float* z);
// Its backward pass for training-mode statistics: dz (the gradient w.r.t. z) becomes the gradient
// w.r.t. x in place, with xhat = (x - mean) * invstd,
//   dx = scale * invstd * (dz - sum(dz) / m - xhat * sum(dz * xhat) / m),
// and *scale_grad receives sum(dz * xhat) (sums in double, in order).
void BatchNormChannelBackward(size_t m, const float* x, float mean, float invstd, float scale,
                              float* dz, float* scale_grad);

// Per row of logits [n, classes]: the cross-entropy against the target q = (1 - smoothing) *
// onehot(labels[i]) + smoothing / classes (in double, through a stable log-sum-exp), whether the
// arg-max is the label, and grad = (softmax - q) * scale. Smoothing 0 is the plain cross-entropy.
// Returns the sum of the losses; *correct receives the count of correct rows.
double SoftmaxCrossEntropy(size_t n, size_t classes, const float* logits, const int32_t* labels,
                           float scale, float* grad, uint64_t* correct, double smoothing = 0);

}  // namespace rf::cpu
