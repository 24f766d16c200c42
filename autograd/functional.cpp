// torch.autograd.functional (functional.h), written after torch/autograd/functional.py: the same
// helpers (_grad_preprocess, _autograd_grad, _fill_in_zeros, _check_requires_grad, _validate_v)
// and the same error messages, on vectors of inputs; the one-Tensor forms unwrap them.
#include "autograd/functional.h"

#include "autograd/engine.h"
#include "autograd/ops.h"

namespace ag::autograd::functional {

namespace {

using Tensors = std::vector<Tensor>;
using FnV = std::function<Tensors(const Tensors&)>;  // several outputs (hessian's inner jacobian)

// A new tensor on t's data whose gradient flows to t (torch's view_as(inp)): the callable's
// argument is then told apart from t itself captured by the callable.
Tensor alias(const Tensor& t) {
  Tensor out = make_view(t, t.shape(), t.strides(), t.impl().offset);
  // out = t  =>  dt = g
  if (should_record({&t})) record(out, "alias", {t}, [](const Tensor& g) { return Grads{g}; });
  return out;
}

// _grad_preprocess: fresh tensors; with create_graph those that require grad stay connected.
Tensors grad_preprocess(const Tensors& inputs, bool create_graph, bool need_graph) {
  Tensors out;
  for (const Tensor& in : inputs) {
    if (create_graph && in.requires_grad()) out.push_back(alias(in));
    else if (need_graph) out.push_back(in.detach().requires_grad_(true));
    else out.push_back(in.detach());
  }
  return out;
}

// _grad_postprocess: without create_graph, nothing returned carries a history.
Tensor post(const Tensor& t, bool create_graph) { return create_graph || !t.defined() ? t : t.detach(); }
Tensors post(const Tensors& ts, bool create_graph) {
  Tensors out;
  for (const Tensor& t : ts) out.push_back(post(t, create_graph));
  return out;
}

// _autograd_grad: grad() over the outputs that require grad (undefined for an unused input).
Tensors autograd_grad(const Tensors& outputs, const Tensors& inputs, const Tensors& grad_outputs, bool create_graph,
                      std::optional<bool> retain_graph = std::nullopt) {
  Tensors outs, gos;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined() || !outputs[i].requires_grad()) continue;
    outs.push_back(outputs[i]);
    gos.push_back(i < grad_outputs.size() ? grad_outputs[i] : Tensor());
  }
  if (outs.empty()) return Tensors(inputs.size());
  return grad(outs, inputs, gos, {.retain_graph = retain_graph, .create_graph = create_graph, .allow_unused = true});
}

// _check_requires_grad, with torch's messages.
void check_requires_grad(const Tensors& ts, const std::string& type, bool strict) {
  if (!strict) return;
  for (size_t i = 0; i < ts.size(); ++i) {
    const std::string n = std::to_string(i);
    if (!ts[i].defined())
      throw std::runtime_error("The output of the user-provided function is independent of input " + n +
                               ". This is not allowed in strict mode.");
    if (ts[i].requires_grad()) continue;
    if (type == "hessian")
      throw std::runtime_error("The hessian of the user-provided function with respect to input " + n +
                               " is independent of the input. This is not allowed in strict mode. You should ensure "
                               "that your function is thrice differentiable and that the hessian depends on the inputs.");
    if (type == "jacobian")
      throw std::runtime_error("While computing the hessian, found that the jacobian of the user-provided function with "
                               "respect to input " + n + " is independent of the input. This is not allowed in strict "
                               "mode. You should ensure that your function is twice differentiable and that the "
                               "jacobian depends on the inputs (this would be violated by a linear function for example).");
    if (type == "grad_inputs")
      throw std::runtime_error("The gradient with respect to input " + n + " is independent of the inputs of the "
                               "user-provided function. This is not allowed in strict mode.");
    throw std::runtime_error("Output " + n + " of the user-provided function does not require gradients. The outputs "
                             "must be computed in a differentiable manner from the input when running in strict mode.");
  }
}

// _fill_in_zeros: an undefined gradient becomes zeros shaped like its reference, or, in strict
// mode, torch's error for the stage it was found at.
Tensors fill_in_zeros(const Tensors& grads, const Tensors& refs, bool strict, bool create_graph, const std::string& stage) {
  Tensors out;
  for (size_t i = 0; i < grads.size(); ++i) {
    const std::string n = std::to_string(i);
    if (!grads[i].defined()) {
      if (strict) {
        if (stage == "back")
          throw std::runtime_error("The output of the user-provided function is independent of input " + n +
                                   ". This is not allowed in strict mode.");
        if (stage == "back_trick")
          throw std::runtime_error("The gradient with respect to the input is independent of entry " + n +
                                   " in the grad_outputs when using the double backward trick to compute forward mode "
                                   "gradients. This is not allowed in strict mode.");
        if (stage == "double_back")
          throw std::runtime_error("The jacobian of the user-provided function is independent of input " + n +
                                   ". This is not allowed in strict mode.");
        throw std::runtime_error("The hessian of the user-provided function is independent of entry " + n +
                                 " in the grad_jacobian. This is not allowed in strict mode as it prevents from using "
                                 "the double backward trick to replace forward mode AD.");
      }
      out.push_back(Tensor::zeros(refs[i].shape(), refs[i].dtype()));
      continue;
    }
    if (strict && create_graph && !grads[i].requires_grad()) {
      if (stage.find("double") == std::string::npos)
        throw std::runtime_error("The jacobian of the user-provided function is independent of input " + n +
                                 ". This is not allowed in strict mode when create_graph=True.");
      throw std::runtime_error("The hessian of the user-provided function is independent of input " + n +
                               ". This is not allowed in strict mode when create_graph=True.");
    }
    out.push_back(grads[i]);
  }
  return out;
}

// _validate_v: v matches `other` (the outputs for vjp, the inputs otherwise) in count and shapes.
void validate_v(const Tensors& v, const Tensors& other, bool is_other_tuple) {
  if (v.size() != other.size()) {
    if (is_other_tuple)
      throw std::runtime_error("v is a tuple of invalid length: should be " + std::to_string(other.size()) + " but got " +
                               std::to_string(v.size()) + ".");
    throw std::runtime_error("The given v should contain a single Tensor.");
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].defined()) throw std::invalid_argument("v: entry " + std::to_string(i) + " is undefined");
    if (v[i].shape() != other[i].shape())
      throw std::runtime_error((is_other_tuple ? "Entry " + std::to_string(i) + " in " : std::string()) +
                               "v has invalid size: should be " + shape_str(other[i].shape()) + " but got " +
                               shape_str(v[i].shape()) + ".");
  }
}

Tensor call(const FnN& func, const Tensors& inputs, const char* who) {
  Tensor out = func(inputs);
  if (!out.defined())
    throw std::invalid_argument(std::string("The outputs of the user-provided function given to ") + who +
                                " must be a Tensor, got an undefined one");
  return out;
}

FnN wrap(const Fn& func) {
  return [func](const Tensors& xs) { return func(xs[0]); };
}

std::pair<Tensor, Tensors> vjp_impl(const FnN& func, const Tensors& inputs, const Tensor& v, const FunctionalOptions& o) {
  const bool outer_grad_mode = GradMode::enabled();
  Tensors xs, vs;
  Tensor out;
  {
    EnableGradGuard on;
    xs = grad_preprocess(inputs, o.create_graph, /*need_graph=*/true);
    out = call(func, xs, "vjp");
    check_requires_grad({out}, "outputs", o.strict);
    if (v.defined()) {
      vs = grad_preprocess({v}, o.create_graph, /*need_graph=*/false);
      validate_v(vs, {out}, /*is_other_tuple=*/false);
    } else if (out.numel() != 1) {
      throw std::runtime_error("The vector v can only be None if the user-provided function returns a single Tensor "
                               "with a single element.");
    }
  }
  SetGradEnabledGuard mode(o.create_graph || outer_grad_mode);
  const Tensors res = fill_in_zeros(autograd_grad({out}, xs, vs, o.create_graph), xs, o.strict, o.create_graph, "back");
  return {post(out, o.create_graph), post(res, o.create_graph)};
}

std::pair<Tensor, Tensor> jvp_impl(const FnN& func, const Tensors& inputs, const Tensors& v, bool is_inputs_tuple,
                                   const FunctionalOptions& o) {
  const bool outer_grad_mode = GradMode::enabled();
  Tensors xs, vs, grad_outputs, grad_inputs;
  Tensor out;
  {
    EnableGradGuard on;
    xs = grad_preprocess(inputs, o.create_graph, /*need_graph=*/true);
    if (!v.empty()) {
      vs = grad_preprocess(v, o.create_graph, /*need_graph=*/false);
      validate_v(vs, xs, is_inputs_tuple);
    } else if (xs.size() != 1 || xs[0].numel() != 1) {
      throw std::runtime_error("The vector v can only be None if the input to the user-provided function is a single "
                               "Tensor with a single element.");
    }
    out = call(func, xs, "jvp");
    check_requires_grad({out}, "outputs", o.strict);
    // The double-backward trick: g(u) = uᵀ·J is linear in u, so ∂(g(u)·v)/∂u = J·v for any u
    // (zeros here, which cannot hold an inf or a nan).
    grad_outputs = {Tensor::zeros(out.shape(), out.dtype()).requires_grad_()};
    grad_inputs = autograd_grad({out}, xs, grad_outputs, /*create_graph=*/true);
    check_requires_grad(grad_inputs, "grad_inputs", o.strict);
  }
  SetGradEnabledGuard mode(o.create_graph || outer_grad_mode);
  const Tensors res =
      fill_in_zeros(autograd_grad(grad_inputs, grad_outputs, vs, o.create_graph), {out}, o.strict, o.create_graph, "back_trick");
  return {post(out, o.create_graph), post(res[0], o.create_graph)};
}

// [output][input] Jacobians, row by row of each output, as torch's reverse mode (not vectorised).
std::vector<Tensors> jacobian_impl(const FnV& func, const Tensors& inputs, bool create_graph, bool strict) {
  EnableGradGuard on;
  const Tensors xs = grad_preprocess(inputs, create_graph, /*need_graph=*/true);
  const Tensors outs = func(xs);
  check_requires_grad(outs, "outputs", strict);
  std::vector<Tensors> jac;
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& out = outs[i];
    std::vector<Tensors> rows(xs.size());  // rows[input][output element]
    const Tensor flat = reshape(out, {-1});
    for (int64_t j = 0; j < out.numel(); ++j) {
      const Tensor element = reshape(narrow(flat, 0, j, 1), {});
      const Tensors vj = autograd_grad({element}, xs, {}, create_graph, /*retain_graph=*/true);
      for (size_t k = 0; k < xs.size(); ++k) {
        if (vj[k].defined()) {
          if (strict && create_graph && !vj[k].requires_grad())
            throw std::runtime_error("The jacobian of the user-provided function is independent of input " +
                                     std::to_string(i) + ". This is not allowed in strict mode when create_graph=True.");
          rows[k].push_back(vj[k]);
        } else {
          if (strict)
            throw std::runtime_error("Output " + std::to_string(i) + " of the user-provided function is independent of "
                                     "input " + std::to_string(k) + ". This is not allowed in strict mode.");
          rows[k].push_back(Tensor::zeros(xs[k].shape(), xs[k].dtype()));
        }
      }
    }
    Tensors jac_i;
    for (size_t k = 0; k < xs.size(); ++k) {
      Shape shape = out.shape();
      shape.insert(shape.end(), xs[k].shape().begin(), xs[k].shape().end());
      jac_i.push_back(post(reshape(stack(rows[k], 0), shape), create_graph));
    }
    jac.push_back(std::move(jac_i));
  }
  return jac;
}

std::vector<Tensors> hessian_impl(const FnN& func, const Tensors& inputs, const FunctionalOptions& o) {
  auto single_output = [&](const Tensors& xs) -> Tensors {
    const Tensor out = call(func, xs, "hessian");
    check_requires_grad({out}, "outputs", o.strict);
    if (out.numel() != 1)
      throw std::runtime_error("The Tensor returned by the function given to hessian should contain a single element");
    return {reshape(out, {})};
  };
  auto jac_func = [&](const Tensors& xs) -> Tensors {
    const Tensors jac = jacobian_impl(single_output, xs, /*create_graph=*/true, /*strict=*/false)[0];
    check_requires_grad(jac, "jacobian", o.strict);
    return jac;
  };
  return jacobian_impl(jac_func, inputs, o.create_graph, o.strict);
}

// What vhp and hvp share: the inputs, f(x) and its gradient, recorded.
struct FirstOrder {
  Tensors xs, vs, jac;
  Tensor out;
};

FirstOrder first_order(const FnN& func, const Tensors& inputs, const Tensors& v, bool is_inputs_tuple,
                       const FunctionalOptions& o, const char* who) {
  FirstOrder f;
  f.xs = grad_preprocess(inputs, o.create_graph, /*need_graph=*/true);
  if (!v.empty()) {
    f.vs = grad_preprocess(v, o.create_graph, /*need_graph=*/false);
    validate_v(f.vs, f.xs, is_inputs_tuple);
  } else if (f.xs.size() != 1 || f.xs[0].numel() != 1) {
    throw std::runtime_error("The vector v can only be None if the input to the user-provided function is a single "
                             "Tensor with a single element.");
  }
  f.out = call(func, f.xs, who);
  check_requires_grad({f.out}, "outputs", o.strict);
  if (f.out.numel() != 1)
    throw std::runtime_error(std::string("The Tensor returned by the function given to ") + who +
                             " should contain a single element");
  f.jac = autograd_grad({f.out}, f.xs, {}, /*create_graph=*/true);
  check_requires_grad(f.jac, "jacobian", o.strict);
  return f;
}

std::pair<Tensor, Tensors> vhp_impl(const FnN& func, const Tensors& inputs, const Tensors& v, bool is_inputs_tuple,
                                    const FunctionalOptions& o) {
  const bool outer_grad_mode = GradMode::enabled();
  FirstOrder f;
  {
    EnableGradGuard on;
    f = first_order(func, inputs, v, is_inputs_tuple, o, "vhp");
  }
  SetGradEnabledGuard mode(o.create_graph || outer_grad_mode);
  const Tensors res =
      fill_in_zeros(autograd_grad(f.jac, f.xs, f.vs, o.create_graph), f.xs, o.strict, o.create_graph, "double_back");
  return {post(f.out, o.create_graph), post(res, o.create_graph)};
}

std::pair<Tensor, Tensors> hvp_impl(const FnN& func, const Tensors& inputs, const Tensors& v, bool is_inputs_tuple,
                                    const FunctionalOptions& o) {
  const bool outer_grad_mode = GradMode::enabled();
  FirstOrder f;
  Tensors grad_jac, double_back;
  {
    EnableGradGuard on;
    f = first_order(func, inputs, v, is_inputs_tuple, o, "hvp");
    // The double-backward trick again: u ↦ uᵀ·H is linear, and its gradient in u applied to v is H·v.
    for (const Tensor& x : f.xs) grad_jac.push_back(Tensor::zeros(x.shape(), x.dtype()).requires_grad_());
    double_back = autograd_grad(f.jac, f.xs, grad_jac, /*create_graph=*/true);
    check_requires_grad(f.jac, "hessian", o.strict);
  }
  SetGradEnabledGuard mode(o.create_graph || outer_grad_mode);
  const Tensors res = fill_in_zeros(autograd_grad(double_back, grad_jac, f.vs, o.create_graph), f.xs, o.strict,
                                    o.create_graph, "double_back_trick");
  return {post(f.out, o.create_graph), post(res, o.create_graph)};
}

Tensors one_or_none(const Tensor& v) { return v.defined() ? Tensors{v} : Tensors{}; }

}  // namespace

std::pair<Tensor, Tensor> vjp(const Fn& func, const Tensor& input, const Tensor& v, const FunctionalOptions& options) {
  auto [out, res] = vjp_impl(wrap(func), {input}, v, options);
  return {out, res[0]};
}
std::pair<Tensor, Tensors> vjp(const FnN& func, const Tensors& inputs, const Tensor& v, const FunctionalOptions& options) {
  return vjp_impl(func, inputs, v, options);
}

std::pair<Tensor, Tensor> jvp(const Fn& func, const Tensor& input, const Tensor& v, const FunctionalOptions& options) {
  return jvp_impl(wrap(func), {input}, one_or_none(v), /*is_inputs_tuple=*/false, options);
}
std::pair<Tensor, Tensor> jvp(const FnN& func, const Tensors& inputs, const Tensors& v, const FunctionalOptions& options) {
  return jvp_impl(func, inputs, v, /*is_inputs_tuple=*/true, options);
}

Tensor jacobian(const Fn& func, const Tensor& input, const FunctionalOptions& options) {
  const FnN f = wrap(func);
  return jacobian_impl([&](const Tensors& xs) { return Tensors{call(f, xs, "jacobian")}; }, {input},
                       options.create_graph, options.strict)[0][0];
}
Tensors jacobian(const FnN& func, const Tensors& inputs, const FunctionalOptions& options) {
  return jacobian_impl([&](const Tensors& xs) { return Tensors{call(func, xs, "jacobian")}; }, inputs,
                       options.create_graph, options.strict)[0];
}

Tensor hessian(const Fn& func, const Tensor& input, const FunctionalOptions& options) {
  return hessian_impl(wrap(func), {input}, options)[0][0];
}
std::vector<Tensors> hessian(const FnN& func, const Tensors& inputs, const FunctionalOptions& options) {
  return hessian_impl(func, inputs, options);
}

std::pair<Tensor, Tensor> hvp(const Fn& func, const Tensor& input, const Tensor& v, const FunctionalOptions& options) {
  auto [out, res] = hvp_impl(wrap(func), {input}, one_or_none(v), /*is_inputs_tuple=*/false, options);
  return {out, res[0]};
}
std::pair<Tensor, Tensors> hvp(const FnN& func, const Tensors& inputs, const Tensors& v, const FunctionalOptions& options) {
  return hvp_impl(func, inputs, v, /*is_inputs_tuple=*/true, options);
}

std::pair<Tensor, Tensor> vhp(const Fn& func, const Tensor& input, const Tensor& v, const FunctionalOptions& options) {
  auto [out, res] = vhp_impl(wrap(func), {input}, one_or_none(v), /*is_inputs_tuple=*/false, options);
  return {out, res[0]};
}
std::pair<Tensor, Tensors> vhp(const FnN& func, const Tensors& inputs, const Tensors& v, const FunctionalOptions& options) {
  return vhp_impl(func, inputs, v, /*is_inputs_tuple=*/true, options);
}

}  // namespace ag::autograd::functional
