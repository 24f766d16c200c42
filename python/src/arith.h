// Arithmetic as torch's Python operators do it: the result dtype by torch's type promotion, the
// operands converted to it, then attograd's op. attograd's arithmetic kernels are floating-point;
// integer results (int64 + int, bool sums) are computed in float64 and converted back, exactly as
// long as every value is within ±2^53 (beyond, it throws rather than round).
#pragma once
#include "common.h"
#include "scalars.h"

namespace agpy {

enum class BinaryOp { Add, Sub, Mul, Div, Pow, Maximum, Minimum };

// torch.result_type for two tensors, and for a tensor and a Python number: tensors with dims
// decide within a category (bool < int < float), a 0-d tensor or a number only lifts the
// category (to the default dtype for a float number).
ag::DType result_type(const ag::Tensor& a, const ag::Tensor& b);
ag::DType result_type(const ag::Tensor& a, const Scalar& s);

ag::Tensor as_dtype(const ag::Tensor& t, ag::DType d);

ag::Tensor binary(BinaryOp op, const ag::Tensor& a, const ag::Tensor& b);
// a op s, or s op a when `reflected` (Python's __rsub__, __rtruediv__, __rpow__).
ag::Tensor binary(BinaryOp op, const ag::Tensor& a, const Scalar& s, bool reflected = false);
// b a Tensor or a number: a op b, or b op a when `reflected`. Null when b is neither (Python's
// operators then return NotImplemented).
std::optional<ag::Tensor> try_binary(BinaryOp op, const ag::Tensor& a, nb::handle b, bool reflected = false);
// Either operand a Tensor or a number (what torch.add(input, other) takes); TypeError otherwise.
ag::Tensor binary(BinaryOp op, nb::handle a, nb::handle b);

// torch's `alpha` of add and sub: other · alpha, a Tensor or a number (an int stays an int when
// alpha is whole).
nb::object times_alpha(nb::handle other, double alpha);

// int64 values computed in float64, back to int64 (throws beyond ±2^53).
ag::Tensor float64_to_int64_exact(const ag::Tensor& t, const char* op);

// Python's in-place operators and torch's add_, ...: the result written into `self` (which keeps
// its dtype, as torch's), recorded as the C++ API records its in-place ops (autograd/inplace.h).
void binary_inplace(BinaryOp op, const ag::Tensor& self, nb::handle other, const char* name);

}  // namespace agpy
