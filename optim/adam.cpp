#include "optim/adam.h"

#include <cmath>

#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/vec.h"
#include "autograd/parallel.h"
#include "optim/torch_math.h"

namespace ag::optim {

namespace {

// Elements per chunk of the flat parallel pass over all float32 parameters.
constexpr int64_t kFlatGrain = 32768;

}  // namespace

template <class O>
void AdamFamily<O>::check_options(const O& o) const {
  const std::string who = std::string(this->name_) + ": ";
  const auto [beta1, beta2] = o.betas;
  if (!(o.lr >= 0)) throw std::invalid_argument(who + "Invalid learning rate: " + repr(o.lr));
  if (!(o.eps >= 0)) throw std::invalid_argument(who + "Invalid epsilon value: " + repr(o.eps));
  if (!(beta1 >= 0 && beta1 < 1)) throw std::invalid_argument(who + "Invalid beta parameter at index 0: " + repr(beta1));
  if (!(beta2 >= 0 && beta2 < 1)) throw std::invalid_argument(who + "Invalid beta parameter at index 1: " + repr(beta2));
  if (!(o.weight_decay >= 0)) throw std::invalid_argument(who + "Invalid weight_decay value: " + repr(o.weight_decay));
}

template <class O>
std::map<std::string, Tensor> AdamFamily<O>::state_to_map(const AdamParamState& s) const {
  // torch keeps the step as a 0-d float32 tensor.
  std::map<std::string, Tensor> m = {{"step", Tensor::scalar(static_cast<double>(s.step), DType::Float32)},
                                     {"exp_avg", s.exp_avg},
                                     {"exp_avg_sq", s.exp_avg_sq}};
  if (s.max_exp_avg_sq.defined()) m["max_exp_avg_sq"] = s.max_exp_avg_sq;
  return m;
}

template <class O>
AdamParamState AdamFamily<O>::state_from_map(const std::map<std::string, Tensor>& m, const Tensor& p) const {
  const char* who = this->name_;
  AdamParamState s;
  bool has_step = false;
  for (const auto& [k, v] : m) {
    if (k == "step") {
      if (!v.defined() || v.numel() != 1) throw std::invalid_argument(std::string(who) + ".load_state_dict: state 'step' must hold one number");
      const double step = v.item();
      if (!(step >= 0) || step != std::floor(step))
        throw std::invalid_argument(std::string(who) + ".load_state_dict: state 'step' is " + repr(step) + ", not a count");
      s.step = static_cast<int64_t>(step);
      has_step = true;
    } else if (k == "exp_avg") {
      s.exp_avg = state_tensor_for(who, k, v, p);
    } else if (k == "exp_avg_sq") {
      s.exp_avg_sq = state_tensor_for(who, k, v, p);
    } else if (k == "max_exp_avg_sq") {
      s.max_exp_avg_sq = state_tensor_for(who, k, v, p);
    } else {
      throw std::invalid_argument(std::string(who) + ".load_state_dict: unknown state '" + k + "'");
    }
  }
  // torch's step would fail on a state without them (KeyError): refused when loading instead.
  for (const auto& [key, present] : {std::pair{"step", has_step}, std::pair{"exp_avg", s.exp_avg.defined()},
                                     std::pair{"exp_avg_sq", s.exp_avg_sq.defined()}})
    if (!present) throw std::invalid_argument(std::string(who) + ".load_state_dict: a parameter's state lacks " + key);
  return s;
}

template <class O>
void AdamFamily<O>::step() {
  struct Span {  // one float32 parameter's update, for the flat pass
    float *w, *m, *v;
    const float* g;
    int64_t n;
    float beta1, beta2, decay, step_size, bc2_sqrt, eps;
  };
  std::vector<Span> spans;
  std::vector<Tensor> keep;  // the contiguous gradients the spans point into
  for (const ParamGroup& group : this->param_groups()) {
    const O& o = group.options;
    // Plain variables, not a structured binding: the AG_DISPATCH_FLOAT lambda below captures
    // them, which C++20 allows but clang 14 (the fuzz build) rejects.
    const double beta1 = std::get<0>(o.betas), beta2 = std::get<1>(o.betas);
    for (const Tensor& p : group.params) {
      const Tensor g = p.grad();
      if (!g.defined()) continue;
      AdamParamState* st = this->state(p);
      if (!st) {
        this->set_state(p, {0, Tensor::zeros(p.shape(), p.dtype()), Tensor::zeros(p.shape(), p.dtype()), Tensor()});
        st = this->state(p);
      }
      check_step_operands(this->name_, p, g, {st->exp_avg, st->exp_avg_sq, st->max_exp_avg_sq});
      if (o.amsgrad && !st->max_exp_avg_sq.defined()) st->max_exp_avg_sq = Tensor::zeros(p.shape(), p.dtype());
      const double t = static_cast<double>(++st->step);
      const double bc1 = 1 - std::pow(beta1, t);
      const double bc2_sqrt = std::sqrt(1 - std::pow(beta2, t));
      const double step_size = o.lr / bc1;
      const double decay = decoupled_ ? 1 - o.lr * o.weight_decay : 1.0;  // AdamW's param.mul_(1 - lr·wd)
      const double l2 = decoupled_ ? 0.0 : o.weight_decay;               // Adam's grad.add(param, alpha=wd)
      const Tensor gc = g.contiguous();
      p.bump_version();  // an in-place write: a graph that saved this weight must not reuse it silently
      if (p.dtype() == DType::Float32 && !o.amsgrad && l2 == 0) {
        spans.push_back({p.data<float>(), st->exp_avg.data<float>(), st->exp_avg_sq.data<float>(), gc.data<float>(), p.numel(),
                         static_cast<float>(beta1), static_cast<float>(beta2), static_cast<float>(decay),
                         static_cast<float>(step_size), static_cast<float>(bc2_sqrt), static_cast<float>(o.eps)});
        keep.push_back(gc);
        continue;
      }
      // torch's single-tensor update, op by op. Its CPU kernels compute a·b + c with one
      // rounding (vec::fmadd, or the compiler's contraction): std::fma does the same, and torch
      // takes √ of the bias correction as ** 0.5.
      AG_DISPATCH_FLOAT(p.dtype(), this->name_, [&] {
        scalar_t* w = p.data<scalar_t>();
        scalar_t* m = st->exp_avg.data<scalar_t>();
        scalar_t* v = st->exp_avg_sq.data<scalar_t>();
        scalar_t* vmax = o.amsgrad ? st->max_exp_avg_sq.data<scalar_t>() : nullptr;
        const scalar_t* gr = gc.data<scalar_t>();
        const scalar_t b2 = static_cast<scalar_t>(beta2), one_minus_b1 = static_cast<scalar_t>(1 - beta1),
                       one_minus_b2 = static_cast<scalar_t>(1 - beta2), dec = static_cast<scalar_t>(decay),
                       wd = static_cast<scalar_t>(l2), neg_step = static_cast<scalar_t>(-step_size),
                       bc2s = static_cast<scalar_t>(std::pow(1 - std::pow(beta2, t), 0.5)), ep = static_cast<scalar_t>(o.eps);
        for (int64_t k = 0, n = p.numel(); k < n; ++k) {
          scalar_t gk = gr[k];
          if (decoupled_) w[k] *= dec;               // param.mul_(1 - lr * weight_decay)
          else if (l2 != 0) gk = std::fma(w[k], wd, gk);  // grad = grad.add(param, alpha=weight_decay)
          m[k] = torch_lerp(m[k], gk, one_minus_b1);        // exp_avg.lerp_(grad, 1 - beta1)
          v[k] = std::fma(one_minus_b2 * gk, gk, v[k] * b2);  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
          scalar_t s = v[k];
          if (vmax) s = vmax[k] = v[k] > vmax[k] || std::isnan(v[k]) ? v[k] : vmax[k];  // torch.maximum(max_exp_avg_sq, exp_avg_sq)
          const scalar_t denom = std::sqrt(s) / bc2s + ep;  // (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
          w[k] += neg_step * m[k] / denom;                  // param.addcdiv_(exp_avg, denom, value=-step_size)
        }
      });
    }
  }
  parallel::parallel_for_spans(spans, kFlatGrain, [](const Span& s, int64_t b, int64_t e) {
    kernels::vec::adamw_step(s.w + b, s.m + b, s.v + b, s.g + b, e - b, s.beta1, s.beta2, s.decay, s.step_size, s.bc2_sqrt,
                             s.eps);
  });
}

template class AdamFamily<AdamOptions>;
template class AdamFamily<AdamWOptions>;

Adam::Adam(std::vector<Tensor> params, AdamOptions options) : Adam(std::vector<ParamGroup>{{std::move(params), options}}) {
  defaults_ = options;
}
Adam::Adam(std::vector<ParamGroup> groups) : AdamFamily("Adam", false) { init(std::move(groups)); }
Adam::Adam(std::vector<PartialParamGroup> groups, AdamOptions defaults) : AdamFamily("Adam", false) {
  init(std::move(groups), defaults);
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options) : AdamW(std::vector<ParamGroup>{{std::move(params), options}}) {
  defaults_ = options;
}
AdamW::AdamW(std::vector<ParamGroup> groups) : AdamFamily("AdamW", true) { init(std::move(groups)); }
AdamW::AdamW(std::vector<PartialParamGroup> groups, AdamWOptions defaults) : AdamFamily("AdamW", true) {
  init(std::move(groups), defaults);
}

}  // namespace ag::optim
