// Selection and sampling, with torch's names: topk, select, mv and repeat_interleave
// (random_, multinomial and the other draws from torch's generator: bind_random.cpp).
#include <cmath>

#include "arith.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "common.h"

namespace agpy {

namespace {

using ag::DType;
using ag::Shape;
using ag::Tensor;
using ag::TensorImpl;

// torch's check of a dim argument, with its IndexError text (a 0-d tensor takes dims -1 and 0).
void check_dim(int64_t dim, int64_t ndim) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  if (dim < -n || dim >= n)
    throw ag::IndexError("Dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " +
                         std::to_string(n - 1) + "], but got " + std::to_string(dim) + ")");
}

nb::object topk(const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted) {
  check_dim(dim, a.dim());
  if (a.dtype() == DType::Bool) {
    PyErr_SetString(PyExc_NotImplementedError, "topk does not support bool dtypes on CPU");
    throw nb::python_error();
  }
  auto [values, indices] = ag::topk(a, k, dim, largest, sorted);
  nb::object types = nb::module_::import_("attograd._C").attr("_return_types");
  return types["topk"](values, indices);
}

// torch.select's bounds check and message (getitem's x[i] has its own, bind_indexing.cpp).
Tensor select(const Tensor& a, int64_t dim, int64_t index) {
  check_dim(dim, a.dim());
  const int64_t d = ag::wrap_dim(dim, a.dim(), "select", a);
  const int64_t n = a.size(d);
  if (index < -n || index >= n)
    throw ag::IndexError("select(): index " + std::to_string(index) + " out of range for tensor of size " +
                         ag::shape_str(a.shape()) + " at dimension " + std::to_string(dim));
  return ag::select(a, d, index);
}

Tensor mv(const Tensor& mat, const Tensor& vec) {
  if (mat.dim() != 2 || vec.dim() != 1)
    throw std::runtime_error("vector + matrix @ vector expected, got 1, " + std::to_string(mat.dim()) + ", " +
                             std::to_string(vec.dim()));
  if (mat.size(1) != vec.size(0))
    throw std::runtime_error("size mismatch, got input (" + std::to_string(mat.size(0)) + "), mat (" +
                             std::to_string(mat.size(0)) + "x" + std::to_string(mat.size(1)) + "), vec (" +
                             std::to_string(vec.size(0)) + ")");
  if (mat.dtype() != vec.dtype())
    throw std::runtime_error(std::string("expected m1 and m2 to have the same dtype, but got: ") +
                             ag::scalar_type_name(mat.dtype()) + " != " + ag::scalar_type_name(vec.dtype()));
  if (!ag::is_floating(mat.dtype())) {  // integers: exact in float64 up to 2^53
    ag::NoGradGuard no_grad;
    return float64_to_int64_exact(ag::matmul(mat.to(DType::Float64), vec.to(DType::Float64)), "mv");
  }
  return ag::matmul(mat, vec);  // (n, m) @ (m) -> (n)
}

// The positions repeat_interleave reads: i repeated repeats[i] times (torch.repeat_interleave of
// a repeats tensor alone). repeats: a number, or an int64 tensor of n values (0-d or one value: all alike).
Tensor repeated_positions(nb::handle repeats, int64_t n) {
  std::vector<int64_t> counts;
  Tensor r;
  if (nb::try_cast(repeats, r)) {
    if (r.dtype() != DType::Int64) throw std::runtime_error("repeat_interleave: repeats must be an int64 tensor, got " + ag::describe(r));
    if (r.dim() > 1) throw std::runtime_error("repeats must be 0-dim or 1-dim tensor");
    for (double v : r.to_double_vector()) counts.push_back(static_cast<int64_t>(v));
    for (int64_t c : counts)
      if (c < 0) throw std::runtime_error("repeats can not be negative");
    if (counts.size() == 1) counts.assign(static_cast<size_t>(n), counts[0]);
    if (static_cast<int64_t>(counts.size()) != n)
      throw std::runtime_error("repeats must have the same size as input along dim, but got repeats.size(0) = " +
                               std::to_string(counts.size()) + " and input.size(0) = " + std::to_string(n));
  } else {
    const int64_t c = nb::cast<int64_t>(repeats);
    if (c < 0) throw std::runtime_error("Repeats must be non-negative");
    counts.assign(static_cast<size_t>(n), c);
  }
  std::vector<int64_t> at;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < counts[static_cast<size_t>(i)]; ++j) at.push_back(i);
  return Tensor::from_vector(at, {static_cast<int64_t>(at.size())});
}

// Rows of a along d at int64 positions, any dtype (index_select, differentiable for floats).
Tensor rows(const Tensor& a, int64_t d, const Tensor& at) {
  if (ag::is_floating(a.dtype())) return ag::index_select(a, d, at);
  ag::NoGradGuard no_grad;
  const Tensor r = ag::index_select(a.to(DType::Float64), d, at);
  return a.dtype() == DType::Bool ? ag::ne(r, 0.0) : float64_to_int64_exact(r, "repeat_interleave");
}

Tensor repeat_interleave(const Tensor& a, nb::handle repeats, std::optional<int64_t> dim) {
  const Tensor x = dim ? a : ag::reshape(a, {-1});  // no dim: the flattened input, as torch's
  const int64_t d = dim ? ag::wrap_dim(*dim, std::max<int64_t>(a.dim(), 1), "repeat_interleave", a) : 0;
  if (x.dim() == 0) return rows(ag::reshape(x, {1}), 0, repeated_positions(repeats, 1));
  return rows(x, d, repeated_positions(repeats, x.size(d)));
}

}  // namespace

void bind_sampling(nb::module_& m, nb::class_<TensorImpl>& cls) {
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  m.attr("_return_types")["topk"] =
      namedtuple("topk", nb::make_tuple("values", "indices"), nb::arg("module") = "attograd.return_types");
  def_both(m, cls, "topk", &topk, nb::arg("k"), nb::arg("dim") = -1, nb::arg("largest") = true, nb::arg("sorted") = true);
  def_both(m, cls, "select", &select, nb::arg("dim"), nb::arg("index"));
  def_both(m, cls, "mv", &mv, nb::arg("vec"));
  cls.def("repeat_interleave", [](const Tensor& a, nb::handle repeats, std::optional<int64_t> dim, nb::handle) {
    return repeat_interleave(a, repeats, dim);
  }, nb::arg("repeats"), nb::arg("dim").none() = nb::none(), nb::kw_only(), nb::arg("output_size").none() = nb::none());
  m.def("repeat_interleave", [](nb::handle input, nb::handle repeats, std::optional<int64_t> dim, nb::handle) -> Tensor {
    // torch.repeat_interleave(repeats): the positions 0, 1, ... each repeated that many times.
    if (repeats.is_none()) {
      const Tensor r = nb::cast<Tensor>(input);
      if (r.dim() != 1) throw std::runtime_error("repeat_interleave: repeats must be 1-d, got " + ag::describe(r));
      return repeated_positions(input, r.size(0));
    }
    return repeat_interleave(nb::cast<Tensor>(input), repeats, dim);
  }, nb::arg("input"), nb::arg("repeats").none() = nb::none(), nb::arg("dim").none() = nb::none(), nb::kw_only(),
     nb::arg("output_size").none() = nb::none());
}

}  // namespace agpy
