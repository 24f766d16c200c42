// The Tensor methods that record or walk the graph: the differentiable copies (clone, to), and
// backward, hooks and retain_grad. They sit above the engine; tensor.cpp, below it, holds
// the rest of the class (storage, factories, data access, in-place writes, printing).
#include <algorithm>

#include "autograd/engine.h"
#include "autograd/profiler.h"

namespace ag {

Tensor Tensor::clone() const {
  AG_PROFILE_OP("clone");
  Tensor out = copy_to_contiguous(*this, dtype());
  // out = a  =>  da = g
  if (should_record({this})) record(out, "clone", {*this}, [](const Tensor& g) { return Grads{g}; });
  return out;
}

Tensor Tensor::to(DType to_dtype) const {
  AG_PROFILE_OP("to");
  if (to_dtype == dtype()) return *this;
  Tensor out = copy_to_contiguous(*this, to_dtype);
  if (is_floating(to_dtype) && should_record({this})) {
    const DType from = dtype();
    // out = a.to(dtype)  =>  da = g.to(a's dtype)
    record(out, "to", {*this}, [from](const Tensor& g) { return Grads{g.to(from)}; });
  }
  return out;
}

void Tensor::backward(const Tensor& grad_output) const { ag::backward({*this}, {grad_output}); }

void Tensor::backward(const Tensor& grad_output, const BackwardOptions& options) const {
  ag::backward({*this}, {grad_output}, options);
}

template <class F> static HookHandle add_hook(std::shared_ptr<HookList<F>>& list, F fn) {
  if (!fn) throw std::invalid_argument("register_hook: empty function");
  if (!list) list = std::make_shared<HookList<F>>();
  const uint64_t id = list->next_id++;
  list->entries.emplace_back(id, std::move(fn));
  return HookHandle([weak = std::weak_ptr<HookList<F>>(list), id] {
    if (auto l = weak.lock())
      std::erase_if(l->entries, [id](const auto& e) { return e.first == id; });
  });
}

HookHandle Tensor::register_hook(GradHook fn) const {
  if (!requires_grad())
    throw std::invalid_argument("register_hook: cannot register a hook on a tensor that does not require grad (" +
                                describe(*this) + ")");
  if (is_leaf()) return add_hook(impl().hooks, std::move(fn));
  return add_hook(grad_fn()->hooks, std::move(fn));
}

HookHandle Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook fn) const {
  if (!requires_grad() || !is_leaf())
    throw std::invalid_argument("register_post_accumulate_grad_hook: only leaf tensors that require grad accumulate a "
                                "gradient, got " + describe(*this) + (is_leaf() ? "" : ", the output of '" + grad_fn()->op + "'"));
  return add_hook(impl().post_accumulate_hooks, std::move(fn));
}

void Tensor::retain_grad() const {
  if (!requires_grad())
    throw std::invalid_argument("retain_grad: the tensor " + describe(*this) + " does not require grad");
  if (is_leaf()) return;  // a leaf keeps its gradient anyway
  grad_fn()->retained = impl_;
}

bool Tensor::retains_grad() const { return !is_leaf() && !grad_fn()->retained.expired(); }

}  // namespace ag
