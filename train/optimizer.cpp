#include "train/optimizer.h"

#include <algorithm>
#include <cmath>

#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/vec.h"
#include "autograd/parallel.h"

namespace ag::train {

namespace {

// Element-wise work over many parameters as one index range [0, Σ n): one pool hand-off for
// all of them, split at fixed offsets (the grain), where a loop of parallel_for calls would run
// every parameter smaller than the grain on one thread. Each element's result does not depend
// on where the range is cut, so the bits are those of the per-parameter loop.
constexpr int64_t kFlatGrain = 32768;

template <class Span, class F>
void for_each_flat(const std::vector<Span>& spans, F&& f) {
  std::vector<int64_t> start(spans.size() + 1, 0);  // prefix sums of the spans' lengths
  for (size_t i = 0; i < spans.size(); ++i) start[i + 1] = start[i] + spans[i].n;
  parallel::parallel_for(start.back(), kFlatGrain, [&](int64_t b, int64_t e) {
    size_t i = static_cast<size_t>(std::upper_bound(start.begin(), start.end(), b) - start.begin()) - 1;
    for (; i < spans.size() && start[i] < e; ++i) {
      const int64_t lo = std::max(b, start[i]) - start[i], hi = std::min(e, start[i + 1]) - start[i];
      if (hi > lo) f(spans[i], lo, hi);
    }
  });
}

}  // namespace

Optimizer::Optimizer(NamedParams params) : params_(std::move(params)) {
  for (auto& [n, p] : params_)
    if (!p.is_contiguous() || !is_floating(p.dtype()))
      throw std::invalid_argument("Optimizer: parameter '" + n + "' must be a contiguous float tensor, got " + describe(p));
}

void Optimizer::zero_grad() {
  for (auto& [_, p] : params_) p.zero_grad();
}

AdamW::AdamW(NamedParams params, double lr, double b1, double b2, double e, double wd)
    : Optimizer(std::move(params)), beta1(b1), beta2(b2), eps(e), weight_decay(wd) {
  lr_ = lr;
  for (auto& [_, p] : params_) {
    exp_avg.push_back(Tensor::zeros(p.shape(), p.dtype()));
    exp_avg_sq.push_back(Tensor::zeros(p.shape(), p.dtype()));
  }
}

void AdamW::step() {
  ++step_count;
  const double bc1 = 1 - std::pow(beta1, static_cast<double>(step_count));
  const double bc2_sqrt = std::sqrt(1 - std::pow(beta2, static_cast<double>(step_count)));
  const double step_size = lr_ / bc1;
  struct Span {  // one float32 parameter's update
    float *w, *m, *v;
    const float* g;
    int64_t n;
    float decay;
  };
  std::vector<Span> spans;
  std::vector<Tensor> keep;  // the contiguous gradients the spans point into
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i].second;
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    const Tensor gc = g.contiguous();
    p.bump_version();  // an in-place write: a graph that saved this weight must not reuse it silently
    const double decay = decays(i) ? 1 - lr_ * weight_decay : 1.0;
    if (p.dtype() == DType::Float32) {  // the vectorised kernel, same formula, all parameters in one pass below
      spans.push_back({p.data<float>(), exp_avg[i].data<float>(), exp_avg_sq[i].data<float>(), gc.data<float>(),
                       p.numel(), static_cast<float>(decay)});
      keep.push_back(gc);
      continue;
    }
    AG_DISPATCH_FLOAT(p.dtype(), "AdamW", [&] {
      scalar_t* w = p.data<scalar_t>();
      scalar_t* m = exp_avg[i].data<scalar_t>();
      scalar_t* v = exp_avg_sq[i].data<scalar_t>();
      const scalar_t* gr = gc.data<scalar_t>();
      const scalar_t b1 = static_cast<scalar_t>(beta1), b2 = static_cast<scalar_t>(beta2);
      const scalar_t dec = static_cast<scalar_t>(decay), ss = static_cast<scalar_t>(step_size);
      const scalar_t bc2s = static_cast<scalar_t>(bc2_sqrt), ep = static_cast<scalar_t>(eps);
      for (int64_t k = 0, n = p.numel(); k < n; ++k) {
        w[k] *= dec;                                        // decoupled weight decay
        m[k] = b1 * m[k] + (1 - b1) * gr[k];                // first moment
        v[k] = b2 * v[k] + (1 - b2) * gr[k] * gr[k];        // second moment
        w[k] -= ss * m[k] / (std::sqrt(v[k]) / bc2s + ep);  // bias-corrected step
      }
    });
  }
  for_each_flat(spans, [&](const Span& s, int64_t b, int64_t e) {
    kernels::vec::adamw_step(s.w + b, s.m + b, s.v + b, s.g + b, e - b, static_cast<float>(beta1),
                             static_cast<float>(beta2), s.decay, static_cast<float>(step_size),
                             static_cast<float>(bc2_sqrt), static_cast<float>(eps));
  });
}

SGD::SGD(NamedParams params, double lr, double mom, double wd)
    : Optimizer(std::move(params)), momentum_buffer(params_.size()), momentum(mom), weight_decay(wd) {
  lr_ = lr;
}

void SGD::step() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i].second;
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    const Tensor gc = g.contiguous();
    p.bump_version();  // an in-place write (see AdamW::step)
    const bool first = !momentum_buffer[i].defined();
    if (momentum != 0 && first) momentum_buffer[i] = Tensor::zeros(p.shape(), p.dtype());
    AG_DISPATCH_FLOAT(p.dtype(), "SGD", [&] {
      scalar_t* w = p.data<scalar_t>();
      const scalar_t* gr = gc.data<scalar_t>();
      scalar_t* buf = momentum != 0 ? momentum_buffer[i].data<scalar_t>() : nullptr;
      const scalar_t mu = static_cast<scalar_t>(momentum), wd = static_cast<scalar_t>(weight_decay),
                     lr = static_cast<scalar_t>(lr_);
      for (int64_t k = 0, n = p.numel(); k < n; ++k) {
        scalar_t d = gr[k] + wd * w[k];
        if (buf) d = buf[k] = first ? d : mu * buf[k] + d;
        w[k] -= lr * d;
      }
    });
  }
}

double clip_grad_norm(const NamedParams& params, double max_norm) {
  // Σ g² per parameter, the float32 ones in parallel (one parameter per chunk), then added in
  // parameter order: the same bits on any thread count.
  std::vector<Tensor> grads;
  for (const auto& [_, p] : params)
    if (p.grad().defined()) grads.push_back(p.grad().contiguous());
  std::vector<double> squares(grads.size(), 0.0);
  parallel::parallel_for(static_cast<int64_t>(grads.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const Tensor& gc = grads[static_cast<size_t>(i)];
      if (gc.dtype() == DType::Float32) squares[static_cast<size_t>(i)] = kernels::vec::sum_squares(gc.data<float>(), gc.numel());
    }
  });
  double total = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].dtype() == DType::Float32)
      total += squares[i];
    else
      for (double v : grads[i].to_double_vector()) total += v * v;
  }
  const double norm = std::sqrt(total);
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1) {
    struct Span {
      float* d;
      int64_t n;
    };
    std::vector<Span> spans;
    size_t k = 0;
    for (const auto& [_, p] : params) {
      if (!p.grad().defined()) continue;
      Tensor& gc = grads[k++];
      if (!gc.same(p.grad())) Tensor(p).set_grad(gc);  // a non-contiguous .grad is replaced by its scaled copy
      if (gc.dtype() == DType::Float32) {
        spans.push_back({gc.data<float>(), gc.numel()});
        continue;
      }
      AG_DISPATCH_FLOAT(gc.dtype(), "clip_grad_norm", [&] {
        scalar_t* d = gc.data<scalar_t>();
        for (int64_t j = 0, n = gc.numel(); j < n; ++j) d[j] *= static_cast<scalar_t>(coef);
      });
    }
    const float c = static_cast<float>(coef);
    for_each_flat(spans, [c](const Span& s, int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) s.d[j] *= c;
    });
  }
  return norm;
}

}  // namespace ag::train
