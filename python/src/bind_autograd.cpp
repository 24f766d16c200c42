// Autograd from Python: grad mode, Tensor.backward, autograd.grad/backward, hooks, retain_grad,
// and the graph as torch shows it (grad_fn with name() and next_functions).
//
// backward and grad release the GIL; the Python hooks they reach take it back (gil.h). A hook
// is held by the graph (PyRef), so it keeps working however long the graph outlives the code
// that registered it.
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/node_names.h"
#include "common.h"
#include "gil.h"
#include "python_hooks.h"

namespace agpy {

namespace {

using ag::Node;
using ag::Tensor;
using ag::TensorImpl;

// torch's AccumulateGrad node, for an edge into a leaf (attograd accumulates without a node).
struct AccumulateGrad {
  std::shared_ptr<TensorImpl> variable;
};

// The node torch shows for `node`: a custom Function's one node for each of its outputs' nodes
// (engine.h), else the node itself; and the output of it that `node` is.
std::shared_ptr<Node> shown_node(const std::shared_ptr<Node>& node) {
  if (node && node->group)
    if (std::shared_ptr<Node> core = node->group->core.lock()) return core;
  return node;
}

int output_nr(const std::shared_ptr<Node>& node) {
  if (!node || !node->group || node->group->core.expired()) return 0;
  const auto& outs = node->group->outputs;
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].lock() == node) {
      const auto& places = node->group->positions;
      return places.empty() ? static_cast<int>(i) : places[i];
    }
  return 0;
}

// A Function's hooks see its grad outputs among all it returned (python_hooks.h).
HookPlaces places_of(const Node& n) {
  if (!n.group || n.group->core.lock().get() != &n || n.group->positions.empty()) return {};
  return {n.group->positions, static_cast<size_t>(n.group->n_returned)};
}

nb::tuple next_functions(const Node& node) {
  nb::list out;
  for (const ag::Edge& e : node.next) {
    if (e.node) out.append(nb::make_tuple(nb::cast(shown_node(e.node)), output_nr(e.node)));
    else if (e.leaf) out.append(nb::make_tuple(nb::cast(AccumulateGrad{e.leaf}), 0));
    else out.append(nb::make_tuple(nb::none(), 0));
  }
  // torch records tensor·number as a binary op whose number is a constant: an edge to nothing
  if (node.op == "add_scalar" || node.op == "mul_scalar") out.append(nb::make_tuple(nb::none(), 0));
  return nb::tuple(out);
}

// torch's Python check of the given gradients (autograd's _make_grads), with its Size reprs.
void check_grad_shapes(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grads) {
  for (size_t i = 0; i < outputs.size() && i < grads.size(); ++i) {
    if (!grads[i].defined() || !outputs[i].defined() || grads[i].shape() == outputs[i].shape()) continue;
    const std::string n = std::to_string(i);
    throw std::runtime_error("Mismatch in shape: grad_output[" + n + "] has a shape of " +
                             nb::cast<std::string>(nb::repr(size_object(grads[i].shape()))) + " and output[" + n +
                             "] has a shape of " + nb::cast<std::string>(nb::repr(size_object(outputs[i].shape()))) + ".");
  }
}

std::vector<Tensor> optional_tensors(const std::vector<std::optional<Tensor>>& ts) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(t ? *t : Tensor());
  return out;
}

}  // namespace

void bind_autograd(nb::module_& m, nb::class_<TensorImpl>& cls) {
  // ---- grad mode -----------------------------------------------------------------------------------
  m.def("is_grad_enabled", [] { return ag::GradMode::enabled(); });
  m.def("_set_grad_enabled", [](bool on) { ag::GradMode::set_enabled(on); }, nb::arg("mode"));

  // ---- the graph -----------------------------------------------------------------------------------
  nb::class_<Node>(m, "Node")
      .def("name", [](const Node& n) { return ag::torch_node_name(n.op); })
      .def_prop_ro("_op", [](const Node& n) { return n.op; }, "attograd's name of the op")
      .def_prop_ro("next_functions", &next_functions)
      .def("register_prehook", [](Node& n, nb::handle hook) {
        return ag::add_node_pre_hook(n.node_hooks, PythonNodePreHook{PyRef(hook), places_of(n)});
      }, nb::arg("fn"), "fn(grad_outputs) before the node's backward: None, or the gradients to use instead")
      .def("register_hook", [](Node& n, nb::handle hook) {
        return ag::add_node_post_hook(n.node_hooks, PythonNodePostHook{PyRef(hook), places_of(n)});
      }, nb::arg("fn"), "fn(grad_inputs, grad_outputs) after the node's backward: None, or grad_inputs to use instead")
      .def("__repr__", [](nb::handle self) {
        const Node& n = nb::cast<const Node&>(self);
        char addr[32];
        std::snprintf(addr, sizeof addr, "%p", static_cast<const void*>(self.ptr()));
        std::string name = ag::torch_node_name(n.op);
        if (name.starts_with("torch::autograd::")) name.erase(0, 17);  // torch's repr: the class alone
        return "<" + name + " object at " + addr + ">";
      });
  nb::class_<AccumulateGrad>(m, "AccumulateGrad")
      .def("name", [](const AccumulateGrad&) { return "torch::autograd::AccumulateGrad"; })
      .def_prop_ro("variable", [](const AccumulateGrad& a) { return Tensor(a.variable); })
      .def_prop_ro("next_functions", [](const AccumulateGrad&) { return nb::tuple(); })
      .def("register_prehook", [](AccumulateGrad& a, nb::handle hook) {
        return ag::add_node_pre_hook(a.variable->accumulate_grad_hooks, PythonNodePreHook{PyRef(hook), {}});
      }, nb::arg("fn"), "fn(grad_outputs) before the gradient is accumulated into .grad (backward only)")
      .def("register_hook", [](AccumulateGrad& a, nb::handle hook) {
        return ag::add_node_post_hook(a.variable->accumulate_grad_hooks, PythonNodePostHook{PyRef(hook), {}});
      }, nb::arg("fn"), "fn((), grad_outputs) after the gradient is accumulated (backward only)")
      .def("__repr__", [](const AccumulateGrad&) { return "<AccumulateGrad object>"; });
  // A view's, refreshed after its base changed; a custom Function's one node for its outputs.
  cls.def_prop_ro("grad_fn", [](const Tensor& t) { return shown_node(t.grad_fn()); });
  cls.def_prop_ro("output_nr", [](const Tensor& t) { return output_nr(t.grad_fn()); });
  m.def("_live_nodes", &Node::live_count, "Graph nodes alive in this process (for leak tests).");

  // ---- hooks ---------------------------------------------------------------------------------------
  nb::class_<ag::HookHandle>(m, "RemovableHandle")
      .def("remove", &ag::HookHandle::remove)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](ag::HookHandle& h, nb::args) { h.remove(); });
  cls.def("register_hook", [](const Tensor& t, nb::handle hook) {
    if (!t.requires_grad())
      throw std::runtime_error("cannot register a hook on a tensor that doesn't require gradient");
    return t.register_hook(PythonGradHook{PyRef(hook)});
  }, nb::arg("hook"));
  cls.def("register_post_accumulate_grad_hook", [](const Tensor& t, nb::handle hook) {
    if (!t.requires_grad())  // torch's messages
      throw std::runtime_error("cannot register a hook on a tensor that doesn't require gradient");
    if (!t.is_leaf()) throw std::runtime_error("post accumulate grad hooks cannot be registered on non-leaf tensors");
    return t.register_post_accumulate_grad_hook(PythonPostAccumulateHook{PyRef(hook)});
  }, nb::arg("hook"));
  cls.def("retain_grad", [](const Tensor& t) {
    if (!t.requires_grad()) throw std::runtime_error("can't retain_grad on Tensor that has requires_grad=False");
    t.retain_grad();
  });
  cls.def_prop_ro("retains_grad", [](const Tensor& t) { return t.retains_grad(); });

  // ---- backward --------------------------------------------------------------------------------------
  cls.def("backward", [](const Tensor& t, std::optional<Tensor> gradient, std::optional<bool> retain_graph,
                         bool create_graph, nb::handle inputs_arg) {
    std::optional<std::vector<Tensor>> inputs;  // one tensor or a sequence of them, as torch's
    if (!inputs_arg.is_none()) {
      Tensor one;
      inputs = nb::try_cast(inputs_arg, one) ? std::vector<Tensor>{one} : nb::cast<std::vector<Tensor>>(inputs_arg);
    }
    ag::BackwardOptions options;
    options.retain_graph = retain_graph;
    options.create_graph = create_graph;
    if (inputs) {
      if (inputs->empty()) throw std::runtime_error("'inputs' argument to backward() cannot be empty.");
      options.inputs = *inputs;
    }
    if (gradient) check_grad_shapes({t}, {*gradient});
    nb::gil_scoped_release release;
    t.backward(gradient ? *gradient : Tensor(), options);
  }, nb::arg("gradient").none() = nb::none(), nb::arg("retain_graph").none() = nb::none(), nb::arg("create_graph") = false,
     nb::arg("inputs").none() = nb::none());
  m.def("_backward", [](const std::vector<Tensor>& tensors, const std::vector<std::optional<Tensor>>& grad_tensors,
                        std::optional<bool> retain_graph, bool create_graph, std::optional<std::vector<Tensor>> inputs) {
    ag::BackwardOptions options;
    options.retain_graph = retain_graph;
    options.create_graph = create_graph;
    if (inputs) {
      if (inputs->empty()) throw std::runtime_error("'inputs' argument to backward() cannot be empty.");
      options.inputs = *inputs;
    }
    const std::vector<Tensor> grads = optional_tensors(grad_tensors);
    check_grad_shapes(tensors, grads);
    nb::gil_scoped_release release;
    ag::backward(tensors, grads, options);
  }, nb::arg("tensors"), nb::arg("grad_tensors"), nb::arg("retain_graph").none(), nb::arg("create_graph"),
     nb::arg("inputs").none());
  m.def("_grad", [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                    const std::vector<std::optional<Tensor>>& grad_outputs, std::optional<bool> retain_graph,
                    bool create_graph, bool allow_unused, bool materialize_grads) {
    ag::GradOptions options;
    options.retain_graph = retain_graph;
    options.create_graph = create_graph;
    options.allow_unused = allow_unused || materialize_grads;
    options.materialize_grads = materialize_grads;
    const std::vector<Tensor> grads = optional_tensors(grad_outputs);
    check_grad_shapes(outputs, grads);
    nb::gil_scoped_release release;
    return ag::grad(outputs, inputs, grads, options);
  }, nb::arg("outputs"), nb::arg("inputs"), nb::arg("grad_outputs"), nb::arg("retain_graph").none(),
     nb::arg("create_graph"), nb::arg("allow_unused"), nb::arg("materialize_grads"));
}

}  // namespace agpy
