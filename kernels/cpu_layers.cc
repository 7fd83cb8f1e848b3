#include "kernels/cpu_layers.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/model.h"

namespace rf::cpu {
namespace {

// One output row of the shifted copy Im2Col makes: dst[x] = src[x + dx], zero where x + dx
// leaves [0, w). dx is -1, 0 or 1 (the kernel column minus 1).
inline void ShiftRow(const float* src, float* dst, uint32_t w, int dx) {
  if (dx == 0) {
    std::memcpy(dst, src, sizeof(float) * w);
  } else if (dx < 0) {
    dst[0] = 0.f;
    std::memcpy(dst + 1, src, sizeof(float) * (w - 1));
  } else {
    std::memcpy(dst, src + 1, sizeof(float) * (w - 1));
    dst[w - 1] = 0.f;
  }
}

// The adjoint of ShiftRow: acc[x + dx] += g[x] wherever x + dx lies in [0, w).
inline void ShiftRowAdd(const float* g, float* acc, uint32_t w, int dx) {
  if (dx == 0) {
    for (uint32_t j = 0; j < w; ++j) acc[j] += g[j];
  } else if (dx < 0) {
    for (uint32_t j = 0; j + 1 < w; ++j) acc[j] += g[j + 1];
  } else {
    for (uint32_t j = 1; j < w; ++j) acc[j] += g[j - 1];
  }
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, const float* a, size_t lda,
          const float* b, size_t ldb, float beta, float* c, size_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.f, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
}

void UseSingleThreadedBlas() { openblas_set_num_threads(1); }

void Im2Col(const ConvShape& s, const float* in, float* col) {
  const size_t plane = size_t{s.height} * s.width;
  for (uint32_t ci = 0; ci < s.in_channels; ++ci) {
    const float* channel = in + ci * s.ld();
    for (int kh = 0; kh < 3; ++kh) {
      for (int kw = 0; kw < 3; ++kw) {
        float* row = col + (size_t{ci} * 9 + kh * 3 + kw) * s.ld();
        for (uint32_t img = 0; img < s.n; ++img) {
          for (uint32_t y = 0; y < s.height; ++y) {
            float* dst = row + img * plane + size_t{y} * s.width;
            const int src_y = static_cast<int>(y) + kh - 1;
            if (src_y < 0 || src_y >= static_cast<int>(s.height)) {
              std::fill(dst, dst + s.width, 0.f);
            } else {
              ShiftRow(channel + img * plane + size_t(src_y) * s.width, dst, s.width, kw - 1);
            }
          }
        }
      }
    }
  }
}

void Col2Im(const ConvShape& s, const float* col_grad, float* in_grad) {
  const size_t plane = size_t{s.height} * s.width;
  for (uint32_t ci = 0; ci < s.in_channels; ++ci) {
    float* channel = in_grad + ci * s.ld();
    std::fill(channel, channel + s.pixels(), 0.f);
    for (int kh = 0; kh < 3; ++kh) {
      for (int kw = 0; kw < 3; ++kw) {
        const float* row = col_grad + (size_t{ci} * 9 + kh * 3 + kw) * s.ld();
        for (uint32_t img = 0; img < s.n; ++img) {
          for (uint32_t y = 0; y < s.height; ++y) {
            const int src_y = static_cast<int>(y) + kh - 1;
            if (src_y < 0 || src_y >= static_cast<int>(s.height)) continue;
            ShiftRowAdd(row + img * plane + size_t{y} * s.width,
                        channel + img * plane + size_t(src_y) * s.width, s.width, kw - 1);
          }
        }
      }
    }
  }
}

void AddColumnBias(size_t rows, size_t cols, const float* bias, bool relu, float* y) {
  for (size_t r = 0; r < rows; ++r) {
    float* row = y + r * cols;
    for (size_t c = 0; c < cols; ++c) {
      const float v = row[c] + bias[c];
      row[c] = relu ? std::max(v, 0.f) : v;
    }
  }
}

void SumColumns(size_t rows, size_t cols, const float* g, float* bias_grad) {
  for (size_t c = 0; c < cols; ++c) {
    double sum = 0;
    for (size_t r = 0; r < rows; ++r) sum += g[r * cols + c];
    bias_grad[c] = static_cast<float>(sum);
  }
}

void ReluBackward(size_t count, const float* out, float* grad) {
  // A select, not a conditional store, so the loop vectorizes.
  for (size_t i = 0; i < count; ++i) grad[i] = out[i] > 0.f ? grad[i] : 0.f;
}

void BiasReluMaxPool(uint32_t channels, uint32_t n, uint32_t stride, uint32_t h, uint32_t w,
                     const float* conv, const float* bias, float* pooled, uint32_t* argmax) {
  const uint32_t oh = h / 2, ow = w / 2;
  for (size_t q = 0; q < size_t{channels} * n; ++q) {
    const size_t p = q / n * stride + q % n;  // the plane's index in memory
    const float b = bias[q / n];
    for (uint32_t y = 0; y < oh; ++y) {
      const float* top = conv + p * h * w + 2 * y * w;
      const float* bottom = top + w;
      float* dst = pooled + (p * oh + y) * ow;
      uint32_t* idx = argmax + (p * oh + y) * ow;
      const uint32_t top_at = 2 * y * w, bottom_at = top_at + w;
      // A tournament of selects (no data-dependent branches, so it vectorizes): the first of
      // each row pair, then the top pair unless the bottom one is strictly larger. This picks
      // the first maximum in row-major window order, as a sequential scan would.
      for (uint32_t x = 0; x < ow; ++x) {
        const float a = top[2 * x], bb = top[2 * x + 1], c = bottom[2 * x], d = bottom[2 * x + 1];
        const bool right_top = bb > a, right_bottom = d > c;
        const float upper = right_top ? bb : a, lower = right_bottom ? d : c;
        const uint32_t upper_at = top_at + 2 * x + right_top;
        const uint32_t lower_at = bottom_at + 2 * x + right_bottom;
        const bool down = lower > upper;
        dst[x] = std::max((down ? lower : upper) + b, 0.f);
        idx[x] = down ? lower_at : upper_at;
      }
    }
  }
}

void BiasReluMaxPoolBackward(uint32_t channels, uint32_t n, uint32_t stride, uint32_t h, uint32_t w,
                             const float* pooled, const float* pooled_grad, const uint32_t* argmax,
                             float* conv_grad, double* bias_grad_sum) {
  const uint32_t oh = h / 2, ow = w / 2;
  const size_t plane_in = size_t{h} * w, plane_out = size_t{oh} * ow;
  for (uint32_t c = 0; c < channels; ++c) {
    double sum = 0;
    for (size_t img = 0; img < n; ++img) {
      const size_t p = size_t{c} * stride + img;
      float* dst = conv_grad + p * plane_in;
      // Zero and scatter one pair of rows at a time, while they are in cache. Windows do not
      // overlap (stride = size = 2): each input receives at most one gradient.
      for (uint32_t y = 0; y < oh; ++y) {
        std::fill(dst + 2 * y * w, dst + (2 * y + 2) * w, 0.f);
        const size_t at = p * plane_out + size_t{y} * ow;
        for (uint32_t x = 0; x < ow; ++x) {
          const float g = pooled[at + x] > 0.f ? pooled_grad[at + x] : 0.f;  // ReLU'
          dst[argmax[at + x]] = g;
          sum += g;
        }
      }
      std::fill(dst + size_t{2 * oh} * w, dst + plane_in, 0.f);  // the row rounding dropped
    }
    bias_grad_sum[c] = sum;
  }
}

double SoftmaxCrossEntropy(size_t n, size_t classes, const float* logits, const int32_t* labels,
                           float scale, float* grad, uint64_t* correct, double smoothing) {
  // The target q = (1 - E) * onehot + E / K; with E = 0 exactly the one-hot (same bits as ever).
  const double off = smoothing / static_cast<double>(classes), on = 1.0 - smoothing + off;
  double loss_sum = 0;
  uint64_t hits = 0;
  for (size_t i = 0; i < n; ++i) {
    const float* z = logits + i * classes;
    float* g = grad + i * classes;
    size_t best = 0;
    for (size_t c = 1; c < classes; ++c) {
      if (z[c] > z[best]) best = c;
    }
    // Subtracting the maximum keeps every exp() in (0, 1]: no overflow for any logits.
    const double top = z[best];
    double sum = 0;
    for (size_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c]) - top);
    const double log_sum = std::log(sum);
    const auto label = static_cast<size_t>(labels[i]);
    double row = log_sum - (static_cast<double>(z[label]) - top);
    if (smoothing != 0) {
      // -sum_c q_c log p_c = (1 - E) * row + E * (log_sum - mean_c (z_c - top)).
      double shifted = 0;
      for (size_t c = 0; c < classes; ++c) shifted += static_cast<double>(z[c]) - top;
      row =
          (1.0 - smoothing) * row + smoothing * (log_sum - shifted / static_cast<double>(classes));
    }
    loss_sum += row;
    for (size_t c = 0; c < classes; ++c) {
      const double p = std::exp(static_cast<double>(z[c]) - top - log_sum);
      g[c] = static_cast<float>((p - (c == label ? on : off)) * scale);
    }
    if (best == label) ++hits;
  }
  *correct = hits;
  return loss_sum;
}

void BatchNormChannelStats(size_t m, const float* x, float* mean, float* var) {
  double sum = 0;
  for (size_t i = 0; i < m; ++i) sum += x[i];
  const double mu = sum / static_cast<double>(m);
  double sq = 0;
  for (size_t i = 0; i < m; ++i) {
    const double d = x[i] - mu;
    sq += d * d;
  }
  *mean = static_cast<float>(mu);
  *var = static_cast<float>(sq / static_cast<double>(m));
}

float BatchNormChannelApply(size_t m, const float* x, float mean, float var, float scale,
                            float* z) {
  const float invstd = 1.f / std::sqrt(var + kBatchNormEps);
  const float k = scale * invstd;
  for (size_t i = 0; i < m; ++i) z[i] = (x[i] - mean) * k;
  return invstd;
}

void BatchNormChannelBackward(size_t m, const float* x, float mean, float invstd, float scale,
                              float* dz, float* scale_grad) {
  double sum = 0, dot = 0;
  for (size_t i = 0; i < m; ++i) {
    sum += dz[i];
    dot += static_cast<double>(dz[i]) * ((x[i] - mean) * invstd);
  }
  const float mean_dz = static_cast<float>(sum / static_cast<double>(m));
  const float mean_dot = static_cast<float>(dot / static_cast<double>(m));
  const float k = scale * invstd;
  for (size_t i = 0; i < m; ++i) {
    const float xhat = (x[i] - mean) * invstd;
    dz[i] = k * (dz[i] - mean_dz - xhat * mean_dot);
  }
  *scale_grad = static_cast<float>(dot);
}

}  // namespace rf::cpu
