// The run-time dispatched float32 kernels (autograd/kernels/vec.h) against the float64 paths
// of the same ops, which use libm and double accumulation: a naive reference beside each fast
// kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "autograd/engine.h"
#include "autograd/kernels/vec.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::max_rel;

namespace {
// Runs f on float32 and float64 copies of the same inputs; returns (out, grads) of each.
struct Both {
  Tensor out32, out64;
  std::vector<Tensor> g32, g64;
};
template <class F>
Both run_both(F f, const std::vector<Tensor>& inputs64, const Tensor& upstream64) {
  Both r;
  std::vector<Tensor> in32, in64;
  for (const Tensor& t : inputs64) {
    in64.push_back(t.detach().clone().requires_grad_());
    in32.push_back(t.detach().to(DType::Float32).requires_grad_());
  }
  r.out64 = f(in64);
  r.out32 = f(in32);
  r.out64.backward(upstream64);
  r.out32.backward(upstream64.to(DType::Float32));
  for (size_t i = 0; i < in64.size(); ++i) {
    r.g64.push_back(in64[i].grad());
    r.g32.push_back(in32[i].grad());
  }
  return r;
}
}  // namespace

TEST(VecKernels, GeluMatchesTheFloat64Path) {
  Generator g(1);
  const Tensor x = Tensor::randn({37, 129}, DType::Float64, g, 0.0, 3.0);  // odd sizes: vector tails
  const Tensor up = Tensor::randn({37, 129}, DType::Float64, g);
  const auto r = run_both([](const std::vector<Tensor>& in) { return gelu(in[0]); }, {x}, up);
  EXPECT_LT(max_rel(r.out32, r.out64), 2e-6);
  EXPECT_LT(max_rel(r.g32[0], r.g64[0]), 2e-6);
}

TEST(VecKernels, SoftmaxRowsMatchTheFloat64Path) {
  Generator g(2);
  std::vector<double> v;
  for (int i = 0; i < 5 * 67; ++i) v.push_back(i % 11 == 3 ? -INFINITY : 4 * g.normal());
  for (int j = 0; j < 67; ++j) v[4 * 67 + j] = -INFINITY;  // a fully masked row
  const Tensor x = Tensor::from_vector(v, {5, 67}, DType::Float64);
  const Tensor up = Tensor::randn({5, 67}, DType::Float64, g);
  const auto r = run_both([](const std::vector<Tensor>& in) { return softmax(in[0]); }, {x}, up);
  EXPECT_LT(max_rel(r.out32, r.out64), 1e-6);
  EXPECT_LT(max_rel(r.g32[0], r.g64[0]), 1e-6);
  for (int j = 0; j < 67; ++j) EXPECT_EQ(r.out32.at({4, j}), 0.0);
  EXPECT_EQ(r.out32.at({0, 3}), 0.0);  // a masked entry is exactly 0
}

TEST(VecKernels, LayerNormMatchesTheFloat64Path) {
  Generator g(3);
  const Tensor x = Tensor::randn({9, 131}, DType::Float64, g, 0.5, 2.0);
  const Tensor w = Tensor::randn({131}, DType::Float64, g), b = Tensor::randn({131}, DType::Float64, g);
  const Tensor up = Tensor::randn({9, 131}, DType::Float64, g);
  const auto r = run_both([](const std::vector<Tensor>& in) { return layer_norm(in[0], in[1], in[2]); }, {x, w, b}, up);
  EXPECT_LT(max_rel(r.out32, r.out64), 5e-6);
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_rel(r.g32[i], r.g64[i]), 2e-5) << "grad " << i;
}

// AdamW: kernels::vec::adamw_step against the same formula written plainly in double (PyTorch's
// AdamW: decoupled decay, bias-corrected moments), over several steps and a length that is not
// a multiple of any vector width.
TEST(VecKernels, AdamwStepMatchesAPlainFloat64Reference) {
  Generator g(5);
  const int64_t n = 1003;
  std::vector<float> w(n), m(n, 0.0f), v(n, 0.0f);
  std::vector<double> wd(n), md(n, 0.0), vd(n, 0.0);
  for (int64_t k = 0; k < n; ++k) wd[k] = w[k] = static_cast<float>(g.normal());
  const std::vector<float> w0 = w;
  const double lr = 1e-2, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, weight_decay = 0.1;
  for (int step = 1; step <= 5; ++step) {
    std::vector<float> grad(n);
    for (int64_t k = 0; k < n; ++k) grad[k] = static_cast<float>(g.normal() * (k % 3 == 0 ? 10.0 : 0.1));
    const double bc1 = 1 - std::pow(beta1, step), bc2_sqrt = std::sqrt(1 - std::pow(beta2, step));
    const double decay = 1 - lr * weight_decay, step_size = lr / bc1;
    kernels::vec::adamw_step(w.data(), m.data(), v.data(), grad.data(), n, static_cast<float>(beta1),
                             static_cast<float>(beta2), static_cast<float>(decay), static_cast<float>(step_size),
                             static_cast<float>(bc2_sqrt), static_cast<float>(eps));
    for (int64_t k = 0; k < n; ++k) {
      const double gk = grad[k];
      wd[k] *= decay;
      md[k] = beta1 * md[k] + (1 - beta1) * gk;
      vd[k] = beta2 * vd[k] + (1 - beta2) * gk * gk;
      wd[k] -= step_size * md[k] / (std::sqrt(vd[k]) / bc2_sqrt + eps);
    }
  }
  double worst = 0;
  for (int64_t k = 0; k < n; ++k) {
    worst = std::max(worst, std::fabs(w[k] - wd[k]) / (1 + std::fabs(wd[k])));
    EXPECT_NEAR(m[k], md[k], 1e-5 * (1 + std::fabs(md[k]))) << k;
    EXPECT_NEAR(v[k], vd[k], 1e-5 * (1 + std::fabs(vd[k]))) << k;
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_GT(std::fabs(w[0] - w0[0]), 1e-3);  // the weights did move: the comparison is not vacuous
}

// Σx² accumulates in double: each float product is exact in double, so only the order of the
// additions differs from a plain loop. Lengths around the 8-wide accumulator, and empty.
TEST(VecKernels, SumSquaresMatchesAPlainDoubleSum) {
  Generator g(6);
  for (int64_t n : {0, 1, 7, 8, 9, 16, 1003}) {
    std::vector<float> x(static_cast<size_t>(n));
    double ref = 0;
    for (float& xi : x) {
      xi = static_cast<float>(g.normal() * 3);
      ref += static_cast<double>(xi) * xi;
    }
    EXPECT_NEAR(kernels::vec::sum_squares(x.data(), n), ref, 1e-13 * (1 + ref)) << "n = " << n;
  }
  const std::vector<float> big = {1e20f, 3.0f, -1e20f};  // float32 would overflow in x², double does not
  const double sq = static_cast<double>(big[0]) * big[0];
  EXPECT_NEAR(kernels::vec::sum_squares(big.data(), 3), 2 * sq, 1e-15 * sq);
}
