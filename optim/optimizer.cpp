#include "optim/optimizer.h"

#include <charconv>

#include "autograd/dims.h"
#include "autograd/engine.h"

namespace ag::optim {

void Optimizer::zero_grad(bool set_to_none) {
  for (size_t g = 0; g < num_param_groups(); ++g)
    for (const Tensor& p : group_params(g)) {
      if (set_to_none) {
        Tensor(p).zero_grad();
        continue;
      }
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (!grad.is_leaf()) {  // a gradient made with create_graph: keep its values, not its graph
        grad = grad.detach();
        Tensor(p).set_grad(grad);
      }
      NoGradGuard no_grad;
      grad.fill_(0.0);
    }
}

Tensor Optimizer::step(const LossClosure& closure) {
  Tensor loss;
  if (closure) {
    EnableGradGuard grad_mode;  // the closure runs the model and backward, as torch's
    loss = closure();
  }
  step();
  return loss;
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (size_t g = 0; g < num_param_groups(); ++g)
    for (const Tensor& p : group_params(g)) out.push_back(p);
  return out;
}

void check_param(const char* optimizer, const Tensor& p, size_t group, size_t index) {
  const std::string where = std::string(optimizer) + ": parameter " + std::to_string(index) + " of group " + std::to_string(group);
  if (!p.defined()) throw std::invalid_argument(where + " is an undefined tensor");
  if (!p.is_leaf()) throw std::invalid_argument(where + ": can't optimize a non-leaf Tensor");
  if (!is_floating(p.dtype()) || !p.is_contiguous())
    throw std::invalid_argument(where + " must be a contiguous float tensor, got " + describe(p));
}

Tensor state_tensor_for(const char* optimizer, const std::string& key, const Tensor& value, const Tensor& p) {
  if (!value.defined()) throw std::invalid_argument(std::string(optimizer) + ".load_state_dict: state '" + key + "' is undefined");
  if (value.shape() != p.shape())
    throw std::invalid_argument(std::string(optimizer) + ".load_state_dict: state '" + key + "' has shape " +
                                shape_str(value.shape()) + " but its parameter " + shape_str(p.shape()));
  Tensor out = Tensor::empty(p.shape(), p.dtype());
  NoGradGuard no_grad;
  out.copy_(value);
  return out;
}

void check_step_operands(const char* optimizer, const Tensor& p, const Tensor& g, std::initializer_list<Tensor> state) {
  // torch's operands: the parameter (a) against its gradient (b), a state (a) against the gradient (b).
  if (g.shape() != p.shape())
    throw size_mismatch(p.shape(), g.shape(), std::string(optimizer) + ".step: parameter " + describe(p) +
                                                  " and its gradient " + describe(g) + "; was its .data replaced?");
  for (const Tensor& s : state)
    if (s.defined() && s.shape() != p.shape())
      throw size_mismatch(s.shape(), g.shape(), std::string(optimizer) + ".step: the state " + describe(s) +
                                                    " of a parameter now " + describe(p) + "; was its .data replaced?");
  if (!p.is_contiguous())
    throw std::invalid_argument(std::string(optimizer) + ".step: parameter " + describe(p) +
                                " is not contiguous (its .data was replaced by a view); assign p.data = x.contiguous()");
}

std::string repr(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace ag::optim
