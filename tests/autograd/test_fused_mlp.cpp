// The fused MLP node (gelu_mlp, autograd/ops/fused_mlp.cpp) against its reference, the plain
// composition linear(gelu(linear(x, W1, b1)), W2, b2): values and every gradient, in float64
// and float32, on sizes that split rows across threads; and reproducible per thread count.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "autograd/engine.h"
#include "autograd/kernels/bf16.h"
#include "autograd/kernels/vec.h"
#include "autograd/ops.h"
#include "tests/test_util.h"
#include "autograd/parallel.h"

using namespace ag;
using ag::testing_util::max_rel;

namespace {
struct MlpRun {
  Tensor y;
  std::vector<Tensor> grads;  // x, W1, b1, W2, b2
};

// One forward and backward of the fused node (fused) or the composition, on fresh leaves.
MlpRun run(bool fused, const std::vector<Tensor>& inputs, const Tensor& upstream) {
  std::vector<Tensor> in;
  for (const Tensor& t : inputs) in.push_back(t.detach().clone().requires_grad_());
  MlpRun r;
  r.y = fused ? gelu_mlp(in[0], in[1], in[2], in[3], in[4]) : linear(gelu(linear(in[0], in[1], in[2])), in[3], in[4]);
  r.y.backward(upstream);
  for (const Tensor& t : in) r.grads.push_back(t.grad());
  return r;
}

// x (3, 100, 64) through 64 -> 256 -> 48: 300 rows, enough work to split across two threads.
std::vector<Tensor> inputs(DType dt, Generator& g) {
  return {Tensor::randn({3, 100, 64}, dt, g), Tensor::randn({256, 64}, dt, g, 0.0, 0.15),
          Tensor::randn({256}, dt, g, 0.0, 0.5), Tensor::randn({48, 256}, dt, g, 0.0, 0.1),
          Tensor::randn({48}, dt, g, 0.0, 0.5)};
}
}  // namespace

TEST(FusedMlp, EqualsTheCompositionInFloat64AndFloat32) {
  const int saved = parallel::num_threads();
  for (int threads : {1, 2}) {
    parallel::set_num_threads(threads);
    for (DType dt : {DType::Float64, DType::Float32}) {
      Generator g(7);
      const auto in = inputs(dt, g);
      const Tensor up = Tensor::randn({3, 100, 48}, dt, g);
      const MlpRun a = run(true, in, up), b = run(false, in, up);
      const double tol = dt == DType::Float64 ? 1e-12 : 2e-5;
      EXPECT_LT(max_rel(a.y, b.y), tol) << threads << " threads";
      const char* names[] = {"x", "W1", "b1", "W2", "b2"};
      for (size_t i = 0; i < 5; ++i) {
        ASSERT_TRUE(a.grads[i].defined()) << names[i];
        EXPECT_EQ(a.grads[i].shape(), in[i].shape()) << names[i];
        EXPECT_LT(max_rel(a.grads[i], b.grads[i]), tol) << names[i] << ", " << threads << " threads";
      }
    }
  }
  parallel::set_num_threads(saved);
}

TEST(FusedMlp, SameThreadCountSameBits) {
  const int saved = parallel::num_threads();
  parallel::set_num_threads(2);
  Generator g(8);
  const auto in = inputs(DType::Float32, g);
  const Tensor up = Tensor::randn({3, 100, 48}, DType::Float32, g);
  const MlpRun a = run(true, in, up), b = run(true, in, up);
  EXPECT_EQ(a.y.to_double_vector(), b.y.to_double_vector());
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(a.grads[i].to_double_vector(), b.grads[i].to_double_vector()) << i;
  parallel::set_num_threads(saved);
}

TEST(FusedMlp, WithoutGradOrBiasesAndOnEmptyInput) {
  Generator g(9);
  auto in = inputs(DType::Float32, g);
  NoGradGuard no_grad;
  const Tensor y = gelu_mlp(in[0], in[1], Tensor(), in[3], Tensor());
  EXPECT_LT(max_rel(y, linear(gelu(linear(in[0], in[1])), in[3])), 2e-5);
  const Tensor none = gelu_mlp(Tensor::zeros({0, 64}, DType::Float32), in[1], in[2], in[3], in[4]);
  EXPECT_EQ(none.shape(), (Shape{0, 48}));
}

TEST(FusedMlp, BadShapesAreOneLineErrors) {
  Generator g(10);
  const auto in = inputs(DType::Float64, g);
  EXPECT_THROW(gelu_mlp(in[0], in[3], in[2], in[3], in[4]), std::invalid_argument);  // x does not fit W1
  EXPECT_THROW(gelu_mlp(in[0], in[1], in[2], in[1], in[4]), std::invalid_argument);  // W2 does not take H
  EXPECT_THROW(gelu_mlp(in[0], in[1], in[4], in[3], in[4]), std::invalid_argument);  // b1 of the wrong size
  EXPECT_THROW(gelu_mlp(in[0].to(DType::Float32), in[1], in[2], in[3], in[4]), std::invalid_argument);  // dtypes
}

TEST(VecKernels, GeluForwardAndGradEqualsForwardAndBackward) {
  std::vector<float> x(1000), ones(1000, 1.0f), y(1000), dx(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -6.0f + 12.0f * static_cast<float>(i) / 999.0f;
  kernels::vec::gelu_forward(x.data(), y.data(), 1000);
  kernels::vec::gelu_backward(x.data(), ones.data(), dx.data(), 1000);  // gelu'(x)
  std::vector<float> both = x, h(1000);
  kernels::vec::gelu_forward_and_grad(both.data(), h.data(), 1000);
  EXPECT_EQ(h, y);
  // gelu_backward takes gelu'(x) from the same body as the fused kernel, so with g = 1 the two
  // derivatives are the same floats.
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(both[i], dx[i]) << "x=" << x[i];
}

TEST(VecKernels, GeluForwardAndGradBf16WritesTheSameOnBothPaths) {
  // The bf16 variants (bits for the native path, float32 values for the portable one) write the
  // same rounded y and the same gelu'(x) on every length: the 64-wide unrolled body and its
  // tail, NaN and ±inf included (where the float32 kernel gives NaN, so do they).
  for (const int64_t n : {1, 63, 64, 65, 1000}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = -6.0f + 12.0f * static_cast<float>(i) / 999.0f;
    if (n > 3) x[1] = NAN, x[2] = INFINITY, x[3] = -INFINITY;
    std::vector<float> grad = x, y(x.size()), grad_bits = x, grad_values = x, values(x.size());
    std::vector<uint16_t> bits(x.size());
    kernels::vec::gelu_forward_and_grad(grad.data(), y.data(), n);
    kernels::vec::gelu_forward_and_grad_bf16(grad_bits.data(), bits.data(), n);
    kernels::vec::gelu_forward_and_grad_bf16(grad_values.data(), values.data(), n);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(std::bit_cast<uint32_t>(kernels::bf16_to_float(bits[i])), std::bit_cast<uint32_t>(values[i])) << x[i];
      EXPECT_EQ(std::bit_cast<uint32_t>(grad_bits[i]), std::bit_cast<uint32_t>(grad_values[i])) << x[i];
      EXPECT_EQ(std::isnan(values[i]), std::isnan(y[i])) << x[i];
      EXPECT_EQ(std::isnan(grad_values[i]), std::isnan(grad[i])) << x[i];
    }
  }
}

TEST(VecKernels, GeluForwardAndGradBf16IsAsCloseToLibmAsTheFloat32Kernel) {
  // The bf16 variant takes Φ and φ from one exp (vec.cpp): against libm in double over
  // [−14, 14], its gelu'(x) is as close as the float32 kernel's and its y is x·Φ(x) rounded to
  // bf16 (within one bf16 step, 2^-8 relative, of the exact value) where that is a normal float.
  const int64_t n = 200001;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = -14.0f + 28.0f * static_cast<float>(i) / (n - 1);
  std::vector<float> grad = x, y(x.size()), grad16 = x;
  std::vector<uint16_t> bits(x.size());
  kernels::vec::gelu_forward_and_grad(grad.data(), y.data(), n);
  kernels::vec::gelu_forward_and_grad_bf16(grad16.data(), bits.data(), n);
  double worst_grad32 = 0, worst_grad16 = 0, worst_y16 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i], cdf = 0.5 * std::erfc(-xd / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * xd * xd) / std::sqrt(2.0 * M_PI), g = cdf + xd * pdf, h = xd * cdf;
    worst_grad32 = std::max(worst_grad32, std::fabs(grad[i] - g));
    worst_grad16 = std::max(worst_grad16, std::fabs(grad16[i] - g));
    if (std::fabs(h) > 1e-30)  // (below, float and bf16 are subnormal: Φ(−14) is 8e-45)
      worst_y16 = std::max(worst_y16, std::fabs(kernels::bf16_to_float(bits[i]) - h) / std::fabs(h));
  }
  EXPECT_LT(worst_grad16, 3e-7);
  EXPECT_LT(worst_grad16, 2 * worst_grad32 + 1e-7) << "float32 kernel's worst: " << worst_grad32;
  EXPECT_LT(worst_y16, 1.0 / 256);
}
