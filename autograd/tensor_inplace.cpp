// In-place writes (fill_, copy_, add_, sub_, mul_, div_, and through them index_put_ and
// assignment to a view), with torch's autograd semantics.
//
// Each op computes its new values out of place with the ops of ops.h, writes them into the
// tensor's elements and bumps the storage's version once. When the write must be recorded (grad
// mode, and the tensor or the other operand requires grad), the out-of-place result's node
// becomes the tensor's grad_fn ("rebasing" its history, as torch's rebase_history):
//   * a tensor that is not a view simply takes that node;
//   * a view's base takes the node of where(region, as_strided_scatter(new values), base): the
//     base as it was outside the region, the new values inside (torch's CopySlices). The base's
//     history_epoch is bumped, and every view of it (this one and any made earlier) derives its
//     grad_fn afresh from the base when next asked (refresh_view_history), as torch regenerates
//     a view's grad_fn after its base changed.
// Tensors the out-of-place op saves are copies where it would save this tensor (mul_, div_), so
// that the write does not trip the saved tensors' version check; a graph that saved this tensor
// earlier does trip it, as in torch.
#include "autograd/dims.h"
#include "autograd/engine.h"
#include "autograd/inplace.h"
#include "autograd/inplace_history.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"

namespace ag {

namespace {

// The base of t's views: t itself when t is not a view.
Tensor base_of(const Tensor& t) { return t.is_view() ? t._base() : t; }

}  // namespace

void check_writable_in_grad_mode(const Tensor& self) {
  if (self.is_view()) {
    const Tensor base = self._base();
    if (base.requires_grad() && base.is_leaf())
      throw std::runtime_error("a view of a leaf Variable that requires grad is being used in an in-place operation.");
  }
  if (self.is_leaf() && self.requires_grad())
    throw std::runtime_error("a leaf Variable that requires grad is being used in an in-place operation.");
}

namespace {

// The layout the view geometry is counted in (as_strided's): the base's, when contiguous.
void check_contiguous_base(const Tensor& base) {
  if (!base.is_contiguous())
    throw std::runtime_error("in-place write through a view of " + describe(base) +
                             ", which is not contiguous: attograd rewrites a base's history only for a contiguous "
                             "base; clone() it first");
}

// `result` (the new values, computed out of place) must fit this tensor: its shape, and a dtype
// that converts to this one without losing a float into an integer.
void check_result(const Tensor& self, const Tensor& result) {
  if (result.shape() != self.shape())
    throw std::runtime_error("output with shape " + shape_str(self.shape()) + " doesn't match the broadcast shape " +
                             shape_str(result.shape()));
  if (!is_floating(self.dtype()) && is_floating(result.dtype()))
    throw std::runtime_error(std::string("result type ") + scalar_type_name(result.dtype()) +
                             " can't be cast to the desired output type " + scalar_type_name(self.dtype()));
}

// The tensor takes result's node as its history; retain_grad() follows it (the old node keeps
// the hooks registered before, as torch's).
void take_history(const Tensor& self, const Tensor& result) {
  TensorImpl& i = self.impl();
  std::shared_ptr<Node> old = i.grad_fn;
  i.grad_fn = result.grad_fn();
  i.requires_grad = result.requires_grad();
  if (old && i.grad_fn && old->retained.lock().get() == &i) {
    old->retained.reset();
    i.grad_fn->retained = self.impl_ptr();
  }
  ++i.history_epoch;
}

// A view's base as it will be once `r` (the view's new values, with their history) is written
// through the view: where(the view's region, r scattered to the base's shape, the base).
Tensor base_with_view_history(const Tensor& view, const Tensor& r) {
  const Tensor base = base_of(view);
  check_contiguous_base(base);
  const int64_t offset = view.impl().offset - base.impl().offset;
  Tensor region = Tensor::zeros(base.shape(), DType::Bool);
  fill_values(make_view(region, view.shape(), view.strides(), offset), 1.0);
  Tensor new_base = where(region, as_strided_scatter(r, base.shape(), view.shape(), view.strides(), offset), base);
  if (new_base.grad_fn()) new_base.grad_fn()->op = "copy_slices";  // torch's CopySlices: the node of a write through a view
  return new_base;
}

// The op: new values from the current ones. `saves_self`: the op keeps its first input for its
// backward, so it gets a copy (the write would otherwise change what it saved).
template <class F>
const Tensor& inplace_impl(const Tensor& self, bool operands_require_grad, bool saves_self, F compute) {
  const bool recorded = GradMode::enabled() && (self.requires_grad() || operands_require_grad);
  if (!recorded) {
    Tensor result;
    {
      NoGradGuard values_only;
      result = compute(self);
    }
    check_result(self, result);
    write_values(self, result);
    self.bump_version();
    return self;
  }
  check_writable_in_grad_mode(self);
  const Tensor cur = saves_self ? self.clone() : self;
  const Tensor result = compute(cur);
  check_result(self, result);
  const Tensor r = result.dtype() == self.dtype() ? result : result.to(self.dtype());
  if (!self.is_view()) {
    write_values(self, r);
    self.bump_version();
    take_history(self, r);
    return self;
  }
  const Tensor new_base = base_with_view_history(self, r);
  write_values(self, r);
  self.bump_version();
  take_history(base_of(self), new_base);
  return self;
}

template <class F>
const Tensor& apply_inplace(const Tensor& self, const Tensor* other, bool saves_self, F compute) {
  return inplace_impl(self, other && other->defined() && other->requires_grad(), saves_self, compute);
}

// other as an operand of this tensor's op: this tensor's dtype when both are floating, and a
// copy when it shares this tensor's storage (x.mul_(x): the write must not change what it saved).
Tensor operand(const Tensor& self, const Tensor& other) {
  if (!other.defined()) throw std::invalid_argument("in-place op: the other operand is an undefined Tensor");
  Tensor o = is_floating(self.dtype()) && is_floating(other.dtype()) ? other.to(self.dtype()) : other;
  if (o.impl().storage == self.impl().storage) o = o.clone();
  return o;
}

Tensor scalar_like(const Tensor& self, double v) { return Tensor::scalar(v, self.dtype()); }

}  // namespace

void rebase_history(const Tensor& self, const Tensor& result) {
  if (!GradMode::enabled() || !result.requires_grad()) return;
  check_writable_in_grad_mode(self);
  if (!self.is_view()) {
    take_history(self, result);
    return;
  }
  take_history(base_of(self), base_with_view_history(self, result));
}

const Tensor& inplace_op(const Tensor& self, const std::vector<Tensor>& operands, bool saves_self,
                         const std::function<Tensor(const Tensor& current)>& compute) {
  bool operands_require_grad = false;
  for (const Tensor& t : operands) operands_require_grad |= t.defined() && t.requires_grad();
  return inplace_impl(self, operands_require_grad, saves_self, compute);
}

void Tensor::refresh_view_history() const {
  TensorImpl& i = impl();
  const Tensor base(i.view_base);
  std::shared_ptr<Node> old = i.grad_fn;
  i.view_epoch = i.view_base->history_epoch;
  if (!base.requires_grad()) {
    i.grad_fn = nullptr;
    i.requires_grad = false;
  } else {
    check_contiguous_base(base);
    Tensor v;
    {
      EnableGradGuard derive;  // a view's history follows its base's in any grad mode, as torch's
      v = as_strided(base, i.shape, i.strides, i.offset - base.impl().offset);
    }
    i.grad_fn = v.grad_fn();
    i.requires_grad = true;
  }
  if (old && i.grad_fn && old->retained.lock().get() == &i) {
    old->retained.reset();
    i.grad_fn->retained = impl_;
  }
}

const Tensor& Tensor::fill_(double value) const {
  const bool recorded = GradMode::enabled() && requires_grad();
  if (!recorded) {  // the plain write, as optimizers and initialisers do it
    fill_values(*this, value);
    bump_version();
    return *this;
  }
  // The new values depend on nothing: the old history gets a zero gradient.
  return apply_inplace(*this, nullptr, false, [value](const Tensor& cur) {
    return where(Tensor::ones({}, DType::Bool), Tensor::full({}, value, cur.dtype()), cur);
  });
}

const Tensor& Tensor::copy_(const Tensor& src) const {
  if (!src.defined()) throw std::invalid_argument("Tensor::copy_: undefined source");
  // src broadcast to this shape (0 strides along the dims it repeats).
  const Shape out = broadcast_shapes(shape(), src.shape(), "copy_");
  if (out != shape())
    throw std::runtime_error("output with shape " + shape_str(shape()) + " doesn't match the broadcast shape " +
                             shape_str(out));
  const bool recorded = GradMode::enabled() && (requires_grad() || src.requires_grad());
  if (!recorded) {
    write_values(*this, src.shape() == shape() ? src : make_view(src, shape(), kernels::broadcast_strides(src, shape()), src.impl().offset));
    bump_version();
    return *this;
  }
  Tensor s = src.to(dtype());  // copy_ converts, as torch's
  if (s.impl().storage == impl().storage) s = s.clone();
  return apply_inplace(*this, &src, false, [&s](const Tensor& cur) {
    return where(Tensor::ones({}, DType::Bool), s.shape() == cur.shape() ? s : expand(s, cur.shape()), cur);
  });
}

const Tensor& Tensor::add_(const Tensor& other, double alpha) const {
  const Tensor o = operand(*this, other);
  return apply_inplace(*this, &other, false, [&o, alpha](const Tensor& cur) {
    return alpha == 1.0 ? ag::add(cur, o) : ag::add(cur, ag::mul(o, alpha));
  });
}

const Tensor& Tensor::add_(double other, double alpha) const {
  return apply_inplace(*this, nullptr, false, [other, alpha](const Tensor& cur) { return ag::add(cur, other * alpha); });
}

const Tensor& Tensor::sub_(const Tensor& other, double alpha) const { return add_(other, -alpha); }

const Tensor& Tensor::sub_(double other, double alpha) const { return add_(other, -alpha); }

const Tensor& Tensor::mul_(const Tensor& other) const {
  const Tensor o = operand(*this, other);
  return apply_inplace(*this, &other, true, [&o](const Tensor& cur) { return ag::mul(cur, o); });
}

const Tensor& Tensor::mul_(double other) const {
  return apply_inplace(*this, nullptr, false, [other](const Tensor& cur) { return ag::mul(cur, other); });
}

const Tensor& Tensor::div_(const Tensor& other) const {
  const Tensor o = operand(*this, other);
  return apply_inplace(*this, &other, true, [&o](const Tensor& cur) { return ag::div(cur, o); });
}

const Tensor& Tensor::div_(double other) const {
  if (!is_floating(dtype()))  // true division gives a float, which an integer tensor cannot hold
    throw std::runtime_error(std::string("result type Float can't be cast to the desired output type ") + scalar_type_name(dtype()));
  const Tensor s = scalar_like(*this, other);
  return apply_inplace(*this, nullptr, true, [&s](const Tensor& cur) { return ag::div(cur, s); });
}

Tensor& Tensor::operator=(const Tensor& src) && {
  copy_(src);
  return *this;
}

Tensor& Tensor::operator=(double value) && {
  fill_(value);
  return *this;
}

}  // namespace ag
