// docs/architecture.md, "A new fused op": the worked example, compiled and checked here.
//
// swiglu(gate, up) = silu(gate) ⊙ up, the gated unit of LLaMA's MLP, as one fused node: one pass
// forward, one pass backward for both gradients, and its definition with ops, from which the
// engine derives every higher derivative (autograd/ops/fused_backward.h).
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/ops/fused_backward.h"

namespace example {
using namespace ag;

// The definition: the same function composed of differentiable ops (never of swiglu itself).
Tensor swiglu_definition(const std::vector<Tensor>& in) { return mul(silu(in[0]), in[1]); }

template <class T> T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

Tensor swiglu(const Tensor& gate, const Tensor& up) {
  kernels::check_same_dtype(gate, up, "swiglu");
  if (gate.shape() != up.shape())
    throw std::invalid_argument("swiglu: shapes differ, " + describe(gate) + " and " + describe(up));
  // Forward kernel: y = gate · σ(gate) · up, one pass.
  Tensor y = kernels::map2_float(gate, up, "swiglu", [](auto a, auto b) { return a * sigmoid(a) * b; });
  if (should_record({&gate, &up})) {
    const bool gg = gate.requires_grad(), gu = up.requires_grad();
    record(y, "swiglu", {gate, up}, [sa = SavedTensor::save(gate), sb = SavedTensor::save(up), gg, gu](const Tensor& g) {
      // y = silu(a) ⊙ b  =>  da = g ⊙ b ⊙ σ(a)(1 + a(1 − σ(a))),  db = g ⊙ silu(a)
      const Tensor a = sa.unpack(), b = sb.unpack();
      return fused_backward("swiglu_backward", {a, b}, g, swiglu_definition, [&] {
        // Backward kernel: both gradients in one pass over (a, b, g), values only.
        const Tensor A = kernels::dense(a), B = kernels::dense(b), G = kernels::dense(g);
        Tensor da = gg ? Tensor::empty(a.shape(), a.dtype()) : Tensor();
        Tensor db = gu ? Tensor::empty(b.shape(), b.dtype()) : Tensor();
        AG_DISPATCH_FLOAT(a.dtype(), "swiglu_backward", [&] {
          const scalar_t *pa = A.data<scalar_t>(), *pb = B.data<scalar_t>(), *pg = G.data<scalar_t>();
          for (int64_t i = 0; i < a.numel(); ++i) {
            const scalar_t s = sigmoid(pa[i]);
            if (gg) da.data<scalar_t>()[i] = pg[i] * pb[i] * s * (1 + pa[i] * (1 - s));
            if (gu) db.data<scalar_t>()[i] = pg[i] * pa[i] * s;
          }
        });
        return Grads{da, db};
      });
    });
  }
  return y;
}
}  // namespace example

using namespace ag;

TEST(ArchitectureFusedOp, SwigluEqualsItsDefinition) {
  Generator gen(3);
  const Tensor a = Tensor::randn({4, 5}, DType::Float64, gen), b = Tensor::randn({4, 5}, DType::Float64, gen);
  const auto y = example::swiglu(a, b).to_double_vector(), r = example::swiglu_definition({a, b}).to_double_vector();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], r[i], 1e-15);
}

TEST(ArchitectureFusedOp, SwigluPassesGradcheckToFirstAndSecondOrder) {
  Generator gen(5);
  const std::vector<Tensor> in = {Tensor::randn({3, 4}, DType::Float64, gen).requires_grad_(),
                                  Tensor::randn({3, 4}, DType::Float64, gen).requires_grad_()};
  const auto f = [](const std::vector<Tensor>& x) { return example::swiglu(x[0], x[1]); };
  const GradcheckReport first = gradcheck(f, in, {}, {"gate", "up"});
  EXPECT_TRUE(first.passed()) << first.table();
  const GradcheckReport second = gradgradcheck(f, in, {}, {"gate", "up"});
  EXPECT_TRUE(second.passed()) << second.table();
}

TEST(ArchitectureFusedOp, OnlyCreateGraphRecordsTheBackward) {
  Tensor a = Tensor::from_vector(std::vector<double>{0.5, -1.0}, {2}, DType::Float64).requires_grad_();
  Tensor b = Tensor::from_vector(std::vector<double>{2.0, 3.0}, {2}, DType::Float64).requires_grad_();
  const Tensor plain = grad({sum(example::swiglu(a, b))}, {a})[0];
  EXPECT_FALSE(plain.requires_grad());  // the kernel's values, nothing recorded
  const Tensor recorded = grad({sum(example::swiglu(a, b))}, {a}, {}, {.create_graph = true})[0];
  ASSERT_TRUE(recorded.requires_grad());
  EXPECT_EQ(recorded.to_double_vector(), plain.to_double_vector());  // the same kernel ran
}
