// The function transforms (torch.autograd.functional: vjp, jvp, jacobian, hessian, hvp, vhp) and
// the gradient checks, for Python callables. The C++ implementations call the callable back, with
// the GIL taken for each call; python/attograd/autograd/ gives them torch's signatures.
#include "autograd/functional.h"
#include "autograd/gradcheck.h"
#include "common.h"
#include "gil.h"

namespace agpy {

namespace {

using ag::Tensor;
namespace fn = ag::autograd::functional;

Tensor one_tensor(nb::handle result) {
  Tensor t;
  if (!nb::try_cast(result, t))
    throw nb::type_error(("the function must return one Tensor (attograd's functional transforms and gradcheck "
                          "take functions with one output), got " +
                          nb::cast<std::string>(nb::str(result.type().attr("__name__"))))
                             .c_str());
  return t;
}

fn::FnN python_fn(nb::handle func) {
  return [f = PyRef(func)](const std::vector<Tensor>& xs) -> Tensor {
    nb::gil_scoped_acquire gil;
    nb::list args;
    for (const Tensor& x : xs) args.append(nb::cast(x));
    return one_tensor(f.get()(*nb::tuple(args)));
  };
}

nb::list as_list(const std::vector<Tensor>& ts) {
  nb::list out;
  for (const Tensor& t : ts) out.append(nb::cast(t));
  return out;
}

nb::tuple report(const ag::GradcheckReport& r) { return nb::make_tuple(r.passed(), r.table()); }

}  // namespace

void bind_functional(nb::module_& m) {
  // Every transform takes the inputs as a list and returns lists (the Python side unwraps the
  // single-tensor case, as torch's tuples do).
  m.def("_vjp", [](nb::handle func, const std::vector<Tensor>& inputs, std::optional<Tensor> v, bool create_graph,
                   bool strict) {
    auto [out, grads] = fn::vjp(python_fn(func), inputs, v ? *v : Tensor(), {create_graph, strict});
    return nb::make_tuple(out, as_list(grads));
  });
  m.def("_jvp", [](nb::handle func, const std::vector<Tensor>& inputs, std::vector<Tensor> v, bool create_graph,
                   bool strict) {
    auto [out, jv] = fn::jvp(python_fn(func), inputs, v, {create_graph, strict});
    return nb::make_tuple(out, jv);
  });
  m.def("_jacobian", [](nb::handle func, const std::vector<Tensor>& inputs, bool create_graph, bool strict) {
    return as_list(fn::jacobian(python_fn(func), inputs, {create_graph, strict}));
  });
  m.def("_hessian", [](nb::handle func, const std::vector<Tensor>& inputs, bool create_graph, bool strict) {
    nb::list rows;
    for (const std::vector<Tensor>& row : fn::hessian(python_fn(func), inputs, {create_graph, strict}))
      rows.append(as_list(row));
    return rows;
  });
  m.def("_hvp", [](nb::handle func, const std::vector<Tensor>& inputs, std::vector<Tensor> v, bool create_graph,
                   bool strict) {
    auto [out, hv] = fn::hvp(python_fn(func), inputs, v, {create_graph, strict});
    return nb::make_tuple(out, as_list(hv));
  });
  m.def("_vhp", [](nb::handle func, const std::vector<Tensor>& inputs, std::vector<Tensor> v, bool create_graph,
                   bool strict) {
    auto [out, vh] = fn::vhp(python_fn(func), inputs, v, {create_graph, strict});
    return nb::make_tuple(out, as_list(vh));
  });
  m.def("_gradcheck", [](nb::handle func, const std::vector<Tensor>& inputs, double eps, double atol, double rtol) {
    return report(ag::gradcheck(python_fn(func), inputs, {eps, atol, rtol}));
  });
  m.def("_gradgradcheck", [](nb::handle func, const std::vector<Tensor>& inputs, double eps, double atol, double rtol,
                             uint64_t seed) {
    return report(ag::gradgradcheck(python_fn(func), inputs, {eps, atol, rtol}, {}, seed));
  });
}

}  // namespace agpy
