#include "model/model.h"

#include <algorithm>
#include <cmath>

namespace rf {
namespace {

// splitmix64: a tiny, fully specified generator, so every backend and platform draws the same
// initial weights for a seed.
uint64_t SplitMix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

uint32_t ModelConfig::HeightAfter(int block) const {
  uint32_t h = height;
  for (int i = 0; i <= block; ++i) h /= 2;
  return h;
}

uint32_t ModelConfig::WidthAfter(int block) const {
  uint32_t w = width;
  for (int i = 0; i <= block; ++i) w /= 2;
  return w;
}

uint32_t ModelConfig::FlatFeatures() const {
  const int last = static_cast<int>(conv.size()) - 1;
  return conv.back() * HeightAfter(last) * WidthAfter(last);
}

Status ModelConfig::Validate() const {
  if (channels == 0 || height == 0 || width == 0)
    return Status::InvalidArgument("model input shape must be non-zero");
  if (classes < 2) return Status::InvalidArgument("the model needs at least 2 classes");
  if (conv.empty()) return Status::InvalidArgument("the model needs at least one conv block");
  for (uint32_t c : conv) {
    if (c == 0) return Status::InvalidArgument("conv blocks need at least one channel");
  }
  if (hidden == 0) return Status::InvalidArgument("the hidden layer needs at least one unit");
  const int last = static_cast<int>(conv.size()) - 1;
  if (HeightAfter(last) == 0 || WidthAfter(last) == 0) {
    return Status::InvalidArgument(std::to_string(conv.size()) + " pooling blocks shrink a " +
                                   std::to_string(height) + "x" + std::to_string(width) +
                                   " input to nothing; use fewer blocks");
  }
  // The size, each product checked: a factor count from a flag or a file must not wrap.
  const std::string limit = "more than " + std::to_string(kMaxModelParameters) + " parameters";
  uint64_t flat = 0;
  if (__builtin_mul_overflow(uint64_t{conv.back()}, uint64_t{HeightAfter(last)}, &flat) ||
      __builtin_mul_overflow(flat, uint64_t{WidthAfter(last)}, &flat) ||
      flat > kMaxModelParameters) {
    return Status::InvalidArgument(
        "the last conv block's output (" + std::to_string(conv.back()) + " x " +
        std::to_string(HeightAfter(last)) + " x " + std::to_string(WidthAfter(last)) +
        ", the hidden layer's inputs) makes the model " + limit + "; use a smaller --conv");
  }
  uint64_t total = 0;
  uint64_t in = channels;
  auto add = [&](const std::string& name, std::initializer_list<uint64_t> dims) {
    uint64_t n = 1;
    bool wrapped = false;
    for (uint64_t d : dims) wrapped = wrapped || __builtin_mul_overflow(n, d, &n);
    if (!wrapped && n <= kMaxModelParameters && total + n <= kMaxModelParameters) {
      total += n;
      return Status::Ok();
    }
    std::string text;
    for (uint64_t d : dims) text += (text.empty() ? "" : " x ") + std::to_string(d);
    return Status::InvalidArgument("the model is too large: " + name + " (" + text + ") makes it " +
                                   limit + "; use a smaller --hidden or --conv");
  };
  for (size_t i = 0; i < conv.size(); ++i) {
    RF_RETURN_IF_ERROR(add("conv" + std::to_string(i) + ".weight", {conv[i], in, 9}));
    RF_RETURN_IF_ERROR(add("conv" + std::to_string(i) + ".bias", {conv[i]}));
    in = conv[i];
  }
  RF_RETURN_IF_ERROR(add("fc1.weight", {hidden, flat}));
  RF_RETURN_IF_ERROR(add("fc1.bias", {hidden}));
  RF_RETURN_IF_ERROR(add("fc2.weight", {classes, hidden}));
  RF_RETURN_IF_ERROR(add("fc2.bias", {classes}));
  for (size_t i = 0; batch_norm && i < conv.size(); ++i) {
    RF_RETURN_IF_ERROR(add("bn" + std::to_string(i) + ".scale", {conv[i]}));
  }
  return Status::Ok();
}

size_t ParamShape::count() const {
  size_t n = 1;
  for (uint32_t d : dims) n *= d;
  return n;
}

std::vector<ParamShape> ParameterShapes(const ModelConfig& c) {
  std::vector<ParamShape> s;
  uint32_t in = c.channels;
  for (size_t i = 0; i < c.conv.size(); ++i) {
    s.push_back({"conv" + std::to_string(i) + ".weight", {c.conv[i], in, 3, 3}});
    s.push_back({"conv" + std::to_string(i) + ".bias", {c.conv[i]}});
    in = c.conv[i];
  }
  s.push_back({"fc1.weight", {c.hidden, c.FlatFeatures()}});
  s.push_back({"fc1.bias", {c.hidden}});
  s.push_back({"fc2.weight", {c.classes, c.hidden}});
  s.push_back({"fc2.bias", {c.classes}});
  if (c.batch_norm) {
    for (size_t i = 0; i < c.conv.size(); ++i) {
      s.push_back({"bn" + std::to_string(i) + ".scale", {c.conv[i]}});
    }
  }
  return s;
}

std::vector<ParamShape> RunningStatShapes(const ModelConfig& c) {
  std::vector<ParamShape> s;
  if (!c.batch_norm) return s;
  for (const char* what : {".running_mean", ".running_var"}) {
    for (size_t i = 0; i < c.conv.size(); ++i) {
      s.push_back({"bn" + std::to_string(i) + what, {c.conv[i]}});
    }
  }
  return s;
}

Tensors InitialRunningStats(const ModelConfig& c) {
  Tensors t;
  const std::vector<ParamShape> shapes = RunningStatShapes(c);
  for (size_t i = 0; i < shapes.size(); ++i) {
    t.t.emplace_back(shapes[i].count(), i < c.conv.size() ? 0.f : 1.f);
  }
  return t;
}

size_t ParameterCount(const ModelConfig& c) {
  size_t n = 0;
  for (const ParamShape& p : ParameterShapes(c)) n += p.count();
  return n;
}

Tensors ZerosLike(const ModelConfig& c) {
  Tensors t;
  for (const ParamShape& p : ParameterShapes(c)) t.t.emplace_back(p.count(), 0.f);
  return t;
}

Tensors InitialParameters(const ModelConfig& c, uint64_t seed) {
  Tensors t = ZerosLike(c);
  const std::vector<ParamShape> shapes = ParameterShapes(c);
  uint64_t state = seed;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (shapes[i].dims.size() == 1) {  // biases start at zero, batch-norm scales at one
      if (shapes[i].name.rfind("bn", 0) == 0) std::fill(t.t[i].begin(), t.t[i].end(), 1.f);
      continue;
    }
    size_t fan_in = 1;
    for (size_t d = 1; d < shapes[i].dims.size(); ++d) fan_in *= shapes[i].dims[d];
    const double bound = std::sqrt(6.0 / static_cast<double>(fan_in));
    for (float& w : t.t[i]) {
      const double u = static_cast<double>(SplitMix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
      w = static_cast<float>((2 * u - 1) * bound);
    }
  }
  return t;
}

AdamWFactors OptimizerFactors(const OptimizerConfig& o) {
  const double t = static_cast<double>(o.adam_step == 0 ? 1 : o.adam_step);
  const double bc1 = 1 - std::pow(static_cast<double>(o.beta1), t);
  const double bc2 = 1 - std::pow(static_cast<double>(o.beta2), t);
  AdamWFactors f;
  f.decay = static_cast<float>(1 - static_cast<double>(o.lr) * o.weight_decay);
  f.one_minus_beta1 = static_cast<float>(1 - static_cast<double>(o.beta1));
  f.one_minus_beta2 = static_cast<float>(1 - static_cast<double>(o.beta2));
  f.step_size = static_cast<float>(o.lr / bc1);
  f.sqrt_bc2 = static_cast<float>(std::sqrt(bc2));
  return f;
}

}  // namespace rf
