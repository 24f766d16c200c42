// autograd.Function subclassed in Python, on the engine's custom-function support
// (autograd/function.h): forward(ctx, *args) runs under no_grad, and its outputs get one node
// whose backward calls the class's backward(ctx, *grads) with the GIL taken. The node holds the
// class and the ctx object (PyRef), so the function keeps working however long its graph lives;
// the ctx holds the saved tensors as the engine saves them (an output as data only), so no cycle
// runs through the graph.
#include "autograd/function.h"
#include "autograd/grad_mode.h"
#include "common.h"
#include "gil.h"

namespace agpy {

namespace {

using ag::Tensor;
using ag::autograd::AutogradContext;

std::vector<Tensor> tensors_of(nb::handle seq, const char* what) {
  std::vector<Tensor> out;
  for (nb::handle h : nb::iter(seq)) {
    if (h.is_none()) {
      out.emplace_back();
      continue;
    }
    Tensor t;
    if (!nb::try_cast(h, t))
      throw nb::type_error((std::string(what) + " takes Tensors (or None), got " +
                            nb::cast<std::string>(nb::str(h.type().attr("__name__"))))
                               .c_str());
    out.push_back(std::move(t));
  }
  return out;
}

// The class's backward, called with one gradient per forward output (None for a non-Tensor
// output), returning one gradient per forward argument.
ag::autograd::detail::UserBackward python_backward(nb::handle cls, nb::handle ctx, std::vector<int> tensor_output_at,
                                                   size_t n_outputs) {
  return [cls = PyRef(cls), ctx = PyRef(ctx), at = std::move(tensor_output_at), n_outputs](
             AutogradContext*, std::vector<Tensor> grads) -> std::vector<Tensor> {
    nb::gil_scoped_acquire gil;
    nb::list args;
    args.append(ctx.get());
    std::vector<nb::object> per_output(n_outputs, nb::none());
    for (size_t i = 0; i < grads.size(); ++i) per_output[static_cast<size_t>(at[i])] = nb::cast(grads[i]);
    for (nb::object& g : per_output) args.append(g);
    nb::object result = cls.get().attr("backward")(*nb::tuple(args));
    if (!nb::isinstance<nb::tuple>(result)) result = nb::make_tuple(result);
    const std::string name = nb::cast<std::string>(cls.get().attr("__name__"));
    return tensors_of(result, ("the backward of " + name).c_str());
  };
}

// torch's two styles: forward(ctx, *args); or, with setup_context defined, forward(*args) and then
// setup_context(ctx, inputs, output), both with grad mode off.
nb::object apply(nb::handle cls, nb::handle ctx_type, bool setup_context, nb::args args) {
  ag::autograd::detail::Arguments arguments;
  nb::list needs;
  for (nb::handle a : args) {
    Tensor t;
    if (!a.is_none() && nb::try_cast(a, t)) {
      arguments.add(t);
      needs.append(nb::bool_(ag::GradMode::enabled() && t.requires_grad()));
    } else {
      arguments.is_tensor.push_back(false);
      needs.append(nb::bool_(false));
    }
  }
  auto cpp_ctx = std::make_shared<AutogradContext>();
  nb::object ctx = ctx_type(cpp_ctx, nb::tuple(needs));
  nb::object out;
  {
    ag::NoGradGuard no_grad;  // forward is one node of the graph, not the ops inside it
    if (setup_context) {
      out = cls.attr("forward")(*args);
      cls.attr("setup_context")(ctx, nb::tuple(args), out);
    } else {
      nb::list forward_args;
      forward_args.append(ctx);
      for (nb::handle a : args) forward_args.append(a);
      out = cls.attr("forward")(*nb::tuple(forward_args));
    }
  }
  const bool single = !nb::isinstance<nb::tuple>(out);
  nb::tuple outs = single ? nb::make_tuple(out) : nb::borrow<nb::tuple>(out);
  std::vector<Tensor> tensor_outs;
  std::vector<int> at;
  for (size_t i = 0; i < outs.size(); ++i) {
    Tensor t;
    if (!outs[i].is_none() && nb::try_cast(outs[i], t)) {
      tensor_outs.push_back(t);
      at.push_back(static_cast<int>(i));
    }
  }
  if (tensor_outs.empty()) return out;  // nothing to differentiate
  const std::string name = nb::cast<std::string>(cls.attr("__name__"));
  std::vector<Tensor> attached = ag::autograd::detail::attach(name, cpp_ctx, tensor_outs, arguments,
                                                              python_backward(cls, ctx, at, outs.size()));
  // Its node hooks see the gradients among all it returned, non-Tensors as None (engine.h).
  for (const Tensor& t : attached) {
    if (!t.defined() || !t.impl().grad_fn || !t.impl().grad_fn->group) continue;
    ag::NodeGroup& group = *t.impl().grad_fn->group;
    if (group.core.expired()) continue;
    group.positions = at;
    group.n_returned = static_cast<int>(outs.size());
    break;
  }
  nb::list result;
  for (size_t i = 0, k = 0; i < outs.size(); ++i) {
    if (k < at.size() && at[k] == static_cast<int>(i)) result.append(nb::cast(attached[k++]));
    else result.append(outs[i]);
  }
  return single ? nb::object(result[0]) : nb::object(nb::tuple(result));
}

}  // namespace

void bind_function(nb::module_& m) {
  nb::class_<AutogradContext>(m, "_FunctionContext")
      .def("save_for_backward", [](AutogradContext& c, nb::args tensors) {
        c.save_for_backward(tensors_of(tensors, "save_for_backward"));
      })
      .def_prop_ro("saved_tensors", [](const AutogradContext& c) {
        nb::list out;
        for (const Tensor& t : c.get_saved_variables()) out.append(nb::cast(t));
        return nb::tuple(out);
      })
      .def("mark_non_differentiable", [](AutogradContext& c, nb::args tensors) {
        c.mark_non_differentiable(tensors_of(tensors, "mark_non_differentiable"));
      })
      .def("set_materialize_grads", &AutogradContext::set_materialize_grads, nb::arg("value"))
      .def("mark_dirty", [](AutogradContext& c, nb::args tensors) { c.mark_dirty(tensors_of(tensors, "mark_dirty")); });
  m.def("_function_apply", &apply);  // (cls, ctx_type, setup_context, *args)
}

}  // namespace agpy
