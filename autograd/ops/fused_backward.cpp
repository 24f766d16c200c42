// fused_backward's recording step: the kernel's gradients become the outputs of a node whose
// backward is derived from the op's definition (fused_backward.h explains the design).
#include "autograd/ops/fused_backward.h"

#include <algorithm>
#include <string>

#include "autograd/ops.h"

namespace ag {

namespace {

// A function of tensors with several outputs, written with differentiable ops.
using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// A node has one output, so several gradients recorded together are packed into one flat tensor
// and handed out as views of it (only under create_graph; one gradient is recorded as it is).
struct Layout {
  std::vector<Shape> shapes;  // per output
  std::vector<bool> defined;  // per output

  static Layout of(const std::vector<Tensor>& ts) {
    Layout l;
    for (const Tensor& t : ts) {
      l.shapes.push_back(t.defined() ? t.shape() : Shape{});
      l.defined.push_back(t.defined());
    }
    return l;
  }
  size_t count() const { return static_cast<size_t>(std::count(defined.begin(), defined.end(), true)); }
  bool packed() const { return count() > 1; }

  // The defined outputs as one tensor: the one itself, or all flattened and concatenated.
  Tensor pack(const std::vector<Tensor>& ts) const {
    std::vector<Tensor> flat;
    for (size_t j = 0; j < ts.size(); ++j)
      if (defined[j]) flat.push_back(packed() ? reshape(ts[j], {-1}) : ts[j]);
    return packed() ? concat(flat, 0) : flat.at(0);
  }
  // The outputs again from a tensor laid out as pack() makes it (views, recorded in grad mode).
  std::vector<Tensor> split(const Tensor& t) const {
    std::vector<Tensor> out(shapes.size());
    int64_t off = 0;
    for (size_t j = 0; j < shapes.size(); ++j) {
      if (!defined[j]) continue;
      if (!packed()) {
        out[j] = t;
        continue;
      }
      const int64_t n = shape_numel(shapes[j]);
      out[j] = reshape(narrow(t, 0, off, n), shapes[j]);
      off += n;
    }
    return out;
  }
};

// f's outputs at the values of xs, computed on fresh leaves: f may run the engine (ag::grad), and
// a graph of its own keeps that nested pass away from the graph being differentiated around it.
std::vector<Tensor> evaluate(const Fn& f, const std::vector<Tensor>& xs) {
  EnableGradGuard recording;
  std::vector<Tensor> leaves;
  for (const Tensor& x : xs) {
    Tensor leaf = x.defined() ? x.detach() : Tensor();
    if (leaf.defined() && is_floating(leaf.dtype())) leaf.requires_grad_();
    leaves.push_back(leaf);
  }
  std::vector<Tensor> out = f(leaves);
  for (Tensor& o : out)
    if (o.defined()) o = o.detach();
  return out;
}

// The vector–Jacobian product of f as a function of (xs..., u): u holds the gradients of f's
// outputs (laid out as `out` says); the result is the gradients of the xs marked in `wrt`
// (undefined elsewhere), recorded, so that it can be differentiated in turn.
Fn vjp_of(Fn f, std::vector<bool> wrt, Layout out) {
  return [f = std::move(f), wrt = std::move(wrt), out = std::move(out)](const std::vector<Tensor>& xu) {
    const size_t n = xu.size() - 1;
    const std::vector<Tensor> xs(xu.begin(), xu.begin() + static_cast<std::ptrdiff_t>(n));
    const std::vector<Tensor> ys = f(xs), us = out.split(xu[n]);
    std::vector<Tensor> roots, seeds, inputs;
    std::vector<size_t> at;
    for (size_t j = 0; j < ys.size() && j < us.size(); ++j)
      if (ys[j].defined() && ys[j].requires_grad() && us[j].defined()) {
        roots.push_back(ys[j]);
        seeds.push_back(us[j]);
      }
    for (size_t i = 0; i < n; ++i)
      if (wrt[i] && xs[i].defined() && xs[i].requires_grad()) {
        inputs.push_back(xs[i]);
        at.push_back(i);
      }
    std::vector<Tensor> d(n);
    if (roots.empty() || inputs.empty()) return d;
    const std::vector<Tensor> gs = grad(roots, inputs, seeds,
                                        {.create_graph = true, .allow_unused = true});  // retained: d's graph runs through f's
    for (size_t k = 0; k < at.size(); ++k) d[at[k]] = gs[k];
    return d;
  };
}

// Records `values`, f's outputs at `inputs`, as the outputs of one node `op` with edges to the
// inputs. Its backward evaluates the vector–Jacobian product of f and records that the same way.
std::vector<Tensor> record_values(std::vector<Tensor> values, const std::string& op, const std::vector<Tensor>& inputs,
                                  const Fn& f) {
  if (!should_record(inputs)) return values;
  const Layout out = Layout::of(values);
  if (out.count() == 0) return values;
  std::vector<bool> wrt;
  std::vector<SavedTensor> saved;
  for (const Tensor& in : inputs) {
    wrt.push_back(in.defined() && in.requires_grad());
    saved.push_back(SavedTensor::save(in));
  }
  Tensor packed;
  {
    NoGradGuard values_only;
    packed = out.pack(values).detach();  // a handle of its own, which recording marks as the node's output
  }
  // outs = f(inputs)  =>  d inputs = vjpᶠ(inputs, u), u the packed output gradients: the kernel's
  //   gradients, recorded by record_values as a node whose own backward is f's vjp again
  packed = record(packed, op.c_str(), inputs, [saved, vjp = vjp_of(f, wrt, out), op](const Tensor& u) {
    std::vector<Tensor> xu;
    for (const SavedTensor& s : saved) xu.push_back(s.unpack());
    xu.push_back(u);
    return record_values(evaluate(vjp, xu), op + "_backward", xu, vjp);
  });
  return out.split(packed);
}

}  // namespace

Grads detail::record_fused_backward(const char* op, std::vector<Tensor> inputs, const Tensor& grad,
                                    FusedDefinition definition, Grads grads) {
  if (grads.size() != inputs.size())
    throw std::logic_error(std::string("fused_backward: the kernel of '") + op + "' returned " +
                           std::to_string(grads.size()) + " gradients for " + std::to_string(inputs.size()) + " inputs");
  // The kernel's gradients are the vector–Jacobian product of the definition, for the inputs it
  // computed a gradient for.
  std::vector<bool> wanted;
  for (const Tensor& g : grads) wanted.push_back(g.defined());
  Fn f = [definition = std::move(definition)](const std::vector<Tensor>& xs) { return std::vector<Tensor>{definition(xs)}; };
  inputs.push_back(grad);
  return record_values(std::move(grads), op, inputs, vjp_of(std::move(f), std::move(wanted), Layout::of({grad})));
}

}  // namespace ag
