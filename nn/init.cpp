#include "nn/init.h"

#include <cmath>

#include "autograd/engine.h"
#include "autograd/kernels/dispatch.h"

namespace ag::nn::init {

namespace {
template <class F>
void fill_with(Tensor& t, const char* op, F draw) {
  if (!t.is_contiguous()) throw std::invalid_argument(std::string(op) + ": needs a contiguous tensor, got " + describe(t));
  t.bump_version();  // an in-place write: saved tensors that saw the old values must notice
  AG_DISPATCH_FLOAT(t.dtype(), op, [&] {
    scalar_t* p = t.data<scalar_t>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = static_cast<scalar_t>(draw());
  });
}
}  // namespace

void uniform_(Tensor& t, double lo, double hi, Generator& gen) {
  fill_with(t, "uniform_", [&] { return gen.uniform(lo, hi); });
}
void normal_(Tensor& t, double mean, double std, Generator& gen) {
  fill_with(t, "normal_", [&] { return mean + std * gen.normal(); });
}
// Initialisers write parameters that already require grad: like torch.nn.init, not recorded.
void zeros_(Tensor& t) {
  NoGradGuard no_grad;
  t.fill_(0.0);
}
void ones_(Tensor& t) {
  NoGradGuard no_grad;
  t.fill_(1.0);
}
void constant_(Tensor& t, double value) {
  NoGradGuard no_grad;
  t.fill_(value);
}

std::pair<int64_t, int64_t> fans(const Tensor& t) {
  if (t.dim() != 2) throw std::invalid_argument("init: fan in/out needs a 2-d weight, got " + describe(t));
  return {t.size(1), t.size(0)};
}

void xavier_uniform_(Tensor& t, double gain, Generator& gen) {
  const auto [fan_in, fan_out] = fans(t);
  const double b = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  uniform_(t, -b, b, gen);
}

void kaiming_uniform_linear_(Tensor& t, Generator& gen) {
  // gain = √(2 / (1 + a²)) with a = √5, bound = gain·√(3 / fan_in) = 1/√fan_in.
  const double b = 1.0 / std::sqrt(static_cast<double>(fans(t).first));
  uniform_(t, -b, b, gen);
}

}  // namespace ag::nn::init
