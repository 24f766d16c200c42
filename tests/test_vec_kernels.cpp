// The run-time dispatched float32 kernels (autograd/kernels/vec.h) against the float64 paths
// of the same ops, which use libm and double accumulation: a naive reference beside each fast
// kernel.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"

using namespace ag;

namespace {
// max |a − b| / (1 + |b|) over all elements
double max_rel(const Tensor& a, const Tensor& b) {
  const auto va = a.to_double_vector(), vb = b.to_double_vector();
  EXPECT_EQ(va.size(), vb.size());
  double w = 0;
  for (size_t i = 0; i < va.size(); ++i) w = std::max(w, std::fabs(va[i] - vb[i]) / (1 + std::fabs(vb[i])));
  return w;
}

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
