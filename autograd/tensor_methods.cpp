// The Tensor methods that are ops (tensor.h, "ops as methods"): each forwards to the function
// of autograd/ops.h with the same name. They live at the ops layer, apart from tensor.cpp,
// which stays below the ops.
#include <stdexcept>
#include <string>

#include "autograd/ops.h"

namespace ag {

Tensor Tensor::sum() const { return ag::sum(*this); }
Tensor Tensor::sum(const std::vector<int64_t>& dim, bool keepdim) const { return ag::sum(*this, dim, keepdim); }
Tensor Tensor::mean() const { return ag::mean(*this); }
Tensor Tensor::mean(const std::vector<int64_t>& dim, bool keepdim) const { return ag::mean(*this, dim, keepdim); }
Tensor Tensor::var(const std::vector<int64_t>& dim, double correction, bool keepdim) const {
  return ag::var(*this, dim, correction, keepdim);
}
Tensor Tensor::amax(const std::vector<int64_t>& dim, bool keepdim) const { return ag::amax(*this, dim, keepdim); }
Tensor Tensor::amin(const std::vector<int64_t>& dim, bool keepdim) const { return ag::amin(*this, dim, keepdim); }
// torch's max() over all elements shares the gradient among ties, as amax does.
Tensor Tensor::max() const { return ag::amax(*this); }
Tensor Tensor::min() const { return ag::amin(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return {ag::max(*this, dim, keepdim), ag::argmax(*this, dim, keepdim)};  // one tie rule: the first
}
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return {ag::min(*this, dim, keepdim), ag::argmin(*this, dim, keepdim)};
}
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return ag::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(int64_t dim, bool keepdim) const { return ag::argmin(*this, dim, keepdim); }
Tensor Tensor::norm(double p, const std::vector<int64_t>& dim, bool keepdim) const {
  return ag::norm(*this, p, dim, keepdim);
}
Tensor Tensor::exp() const { return ag::exp(*this); }
Tensor Tensor::log() const { return ag::log(*this); }
Tensor Tensor::sqrt() const { return ag::sqrt(*this); }
Tensor Tensor::abs() const { return ag::abs(*this); }
Tensor Tensor::neg() const { return ag::neg(*this); }
Tensor Tensor::tanh() const { return ag::tanh(*this); }
Tensor Tensor::sigmoid() const { return ag::sigmoid(*this); }
Tensor Tensor::relu() const { return ag::relu(*this); }
Tensor Tensor::sin() const { return ag::sin(*this); }
Tensor Tensor::cos() const { return ag::cos(*this); }
Tensor Tensor::pow(double exponent) const { return ag::pow(*this, exponent); }
Tensor Tensor::add(const Tensor& other, double alpha) const {
  return alpha == 1.0 ? ag::add(*this, other) : ag::add(*this, ag::mul(other, alpha));
}
Tensor Tensor::add(double other) const { return ag::add(*this, other); }
Tensor Tensor::sub(const Tensor& other, double alpha) const {
  return alpha == 1.0 ? ag::sub(*this, other) : ag::sub(*this, ag::mul(other, alpha));
}
Tensor Tensor::sub(double other) const { return ag::add(*this, -other); }
Tensor Tensor::mul(const Tensor& other) const { return ag::mul(*this, other); }
Tensor Tensor::mul(double other) const { return ag::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return ag::div(*this, other); }
Tensor Tensor::div(double other) const { return ag::div(*this, Tensor::scalar(other, dtype())); }  // true division
bool Tensor::equal(const Tensor& other) const { return ag::equal(*this, other); }
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return ag::allclose(*this, other, rtol, atol, equal_nan);
}
Tensor Tensor::clamp(std::optional<double> min, std::optional<double> max) const { return ag::clamp(*this, min, max); }
Tensor Tensor::softmax(int64_t dim) const { return ag::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return ag::log_softmax(*this, dim); }
Tensor Tensor::matmul(const Tensor& other) const { return ag::matmul(*this, other); }

Tensor Tensor::t() const {
  if (dim() > 2)
    throw std::invalid_argument("t: expects a tensor with <= 2 dims, got " + describe(*this) + " (use transpose)");
  return dim() < 2 ? *this : ag::transpose(*this, 0, 1);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const { return ag::transpose(*this, dim0, dim1); }
Tensor Tensor::permute(const std::vector<int64_t>& dims) const { return ag::permute(*this, dims); }
Tensor Tensor::view(const Shape& shape) const { return ag::view(*this, shape); }
Tensor Tensor::reshape(const Shape& shape) const { return ag::reshape(*this, shape); }
Tensor Tensor::unsqueeze(int64_t dim) const { return ag::unsqueeze(*this, dim); }

Tensor Tensor::squeeze() const {
  Tensor out = *this;
  for (int64_t d = dim() - 1; d >= 0; --d)
    if (shape()[d] == 1) out = ag::squeeze(out, d);
  return out;
}

Tensor Tensor::squeeze(int64_t dim) const { return ag::squeeze(*this, dim); }
Tensor Tensor::flip(const std::vector<int64_t>& dims) const { return ag::flip(*this, dims); }
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return ag::chunk(*this, chunks, dim); }
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const { return ag::split(*this, split_size, dim); }
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return ag::unbind(*this, dim); }

}  // namespace ag
