#include "optim/sgd.h"

#include <cmath>

#include "autograd/kernels/dispatch.h"

namespace ag::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : SGD(std::vector<ParamGroup>{{std::move(params), options}}) {
  defaults_ = options;
}

SGD::SGD(std::vector<ParamGroup> groups) : OptimizerBase("SGD") { init(std::move(groups)); }

SGD::SGD(std::vector<PartialParamGroup> groups, SGDOptions defaults) : OptimizerBase("SGD") {
  init(std::move(groups), defaults);
}

void SGD::check_options(const SGDOptions& o) const {
  if (!(o.lr >= 0)) throw std::invalid_argument("SGD: Invalid learning rate: " + repr(o.lr));
  if (!(o.momentum >= 0)) throw std::invalid_argument("SGD: Invalid momentum value: " + repr(o.momentum));
  if (!(o.weight_decay >= 0)) throw std::invalid_argument("SGD: Invalid weight_decay value: " + repr(o.weight_decay));
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    throw std::invalid_argument("SGD: Nesterov momentum requires a momentum and zero dampening");
}

std::map<std::string, Tensor> SGD::state_to_map(const SGDParamState& s) const {
  if (!s.momentum_buffer.defined()) return {};
  return {{"momentum_buffer", s.momentum_buffer}};
}

SGDParamState SGD::state_from_map(const std::map<std::string, Tensor>& m, const Tensor& p) const {
  SGDParamState s;
  for (const auto& [k, v] : m) {
    if (k != "momentum_buffer") throw std::invalid_argument("SGD.load_state_dict: unknown state '" + k + "'");
    if (v.defined()) s.momentum_buffer = state_tensor_for("SGD", k, v, p);
  }
  return s;
}

void SGD::step() {
  for (const ParamGroup& group : param_groups()) {
    const SGDOptions& o = group.options;
    for (const Tensor& p : group.params) {
      const Tensor g = p.grad();
      if (!g.defined()) continue;
      const Tensor gc = g.contiguous();
      SGDParamState* st = state(p);
      if (!st) {
        set_state(p, {});
        st = state(p);
      }
      check_step_operands("SGD", p, g, {st->momentum_buffer});
      const bool first = !st->momentum_buffer.defined();
      if (o.momentum != 0 && first) st->momentum_buffer = Tensor::empty(p.shape(), p.dtype());
      p.bump_version();  // an in-place write: a graph that saved this weight must not reuse it silently
      AG_DISPATCH_FLOAT(p.dtype(), "SGD", [&] {
        scalar_t* w = p.data<scalar_t>();
        const scalar_t* gr = gc.data<scalar_t>();
        scalar_t* buf = o.momentum != 0 ? st->momentum_buffer.data<scalar_t>() : nullptr;
        const scalar_t mu = static_cast<scalar_t>(o.momentum), wd = static_cast<scalar_t>(o.weight_decay),
                       keep = static_cast<scalar_t>(1 - o.dampening), neg_lr = static_cast<scalar_t>(-o.lr);
        // torch's CPU kernels compute add(a, b, alpha) as one fused multiply-add, fma(b, alpha, a):
        // std::fma rounds once too, which keeps float64 within an ulp of torch.
        for (int64_t k = 0, n = p.numel(); k < n; ++k) {
          scalar_t d = gr[k];
          if (o.weight_decay != 0) d = std::fma(w[k], wd, d);  // grad.add(param, alpha=weight_decay)
          if (buf) {
            buf[k] = first ? d : std::fma(d, keep, buf[k] * mu);  // buf.mul_(momentum).add_(grad, alpha=1-dampening)
            d = o.nesterov ? std::fma(buf[k], mu, d) : buf[k];    // grad.add(buf, alpha=momentum)
          }
          w[k] = std::fma(d, neg_lr, w[k]);  // param.add_(grad, alpha=-lr)
        }
      });
    }
  }
}

}  // namespace ag::optim
