// docs/architecture.md, "A new op": softsign(x) = x / (1 + |x|), as one node of the graph with
// its backward beside its forward (micrograd's way), written as differentiable ops so that
// create_graph (a second derivative) works too; then checked as every op is, by gradcheck and
// gradgradcheck in float64. An op of the library itself goes into autograd/ops/*.cpp, is
// declared in autograd/ops.h and gets a row in cli/harness/gradcheck_cases.cpp (a test fails for
// an op of ops.h without one).
#include <gtest/gtest.h>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"

namespace ag::example {

Tensor softsign(const Tensor& x) {
  Tensor out;
  {
    NoGradGuard no_grad;  // the ops of the forward are not nodes of their own
    out = div(x, add(abs(x), 1.0));  // x / (1 + |x|)
  }
  if (should_record({&x})) {
    record(out, "softsign", {x}, [sx = SavedTensor::save(x)](const Tensor& g) {
      // out = x / (1 + |x|)  =>  dx = g / (1 + |x|)²
      const Tensor x = sx.unpack();
      const Tensor d = add(abs(x), 1.0);
      return Grads{div(g, mul(d, d))};
    });
  }
  return out;
}

TEST(ArchitectureExample, ANewOpPassesGradcheckToSecondOrder) {
  Generator gen(3);
  const Tensor x = Tensor::randn({3, 4}, DType::Float64, gen).requires_grad_();
  const auto f = [](const std::vector<Tensor>& in) { return softsign(in[0]); };
  const GradcheckReport first = gradcheck(f, {x});
  EXPECT_TRUE(first.passed()) << first.table();
  const GradcheckReport second = gradgradcheck(f, {x});
  EXPECT_TRUE(second.passed()) << second.table();
  EXPECT_EQ(softsign(x).grad_fn()->op, "softsign");  // one node
}

}  // namespace ag::example
