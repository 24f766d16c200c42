#include "train/optimizer.h"

#include <cmath>

#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/vec.h"
#include "autograd/parallel.h"

namespace ag::train {

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
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i].second;
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    const Tensor gc = g.contiguous();
    p.bump_version();  // an in-place write: a graph that saved this weight must not reuse it silently
    const double decay = decays(i) ? 1 - lr_ * weight_decay : 1.0;
    if (p.dtype() == DType::Float32) {  // the vectorised kernel, same formula
      float *w = p.data<float>(), *m = exp_avg[i].data<float>(), *v = exp_avg_sq[i].data<float>();
      const float* gr = gc.data<float>();
      parallel::parallel_for(p.numel(), 32768, [&](int64_t b, int64_t e) {
        kernels::vec::adamw_step(w + b, m + b, v + b, gr + b, e - b, static_cast<float>(beta1),
                                 static_cast<float>(beta2), static_cast<float>(decay), static_cast<float>(step_size),
                                 static_cast<float>(bc2_sqrt), static_cast<float>(eps));
      });
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
  double total = 0;
  for (const auto& [_, p] : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    const Tensor gc = g.contiguous();
    if (gc.dtype() == DType::Float32) {
      total += kernels::vec::sum_squares(gc.data<float>(), gc.numel());
    } else {
      for (double v : gc.to_double_vector()) total += v * v;
    }
  }
  const double norm = std::sqrt(total);
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1) {
    for (const auto& [_, p] : params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      Tensor gc = g.contiguous();
      AG_DISPATCH_FLOAT(gc.dtype(), "clip_grad_norm", [&] {
        scalar_t* d = gc.data<scalar_t>();
        for (int64_t k = 0, n = gc.numel(); k < n; ++k) d[k] *= static_cast<scalar_t>(coef);
      });
      if (!gc.same(g)) Tensor(p).set_grad(gc);
    }
  }
  return norm;
}

}  // namespace ag::train
