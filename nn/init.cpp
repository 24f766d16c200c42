#include "nn/init.h"

#include <cmath>

#include "autograd/engine.h"
#include "autograd/random_ops.h"

namespace ag::nn::init {

// Initialisers write parameters that already require grad: like torch.nn.init, not recorded.
void uniform_(Tensor& t, double lo, double hi, Generator& gen) {
  NoGradGuard no_grad;
  ag::uniform_(t, lo, hi, gen);
}
void normal_(Tensor& t, double mean, double sd, Generator& gen) {
  NoGradGuard no_grad;
  ag::normal_(t, mean, sd, gen);
}
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

double xavier_uniform_bound(int64_t fan_in, int64_t fan_out, double gain) {
  const double sd = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return std::sqrt(3.0) * sd;
}

double kaiming_uniform_bound(int64_t fan, double a) {
  const double gain = std::sqrt(2.0 / (1 + a * a));
  return std::sqrt(3.0) * (gain / std::sqrt(static_cast<double>(fan)));
}

void xavier_uniform_(Tensor& t, double gain, Generator& gen) {
  const auto [fan_in, fan_out] = fans(t);
  const double b = xavier_uniform_bound(fan_in, fan_out, gain);
  uniform_(t, -b, b, gen);
}

void kaiming_uniform_linear_(Tensor& t, Generator& gen) {
  const double b = kaiming_uniform_bound(fans(t).first, std::sqrt(5.0));
  uniform_(t, -b, b, gen);
}

}  // namespace ag::nn::init
