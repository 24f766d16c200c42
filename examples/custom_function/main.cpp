// A custom autograd Function (softplus.h) and its gradient checks: gradcheck compares its
// backward with central differences, gradgradcheck its double backward; then it is used in a
// model like any op.
//
//   custom_function [N]     (N inputs to check, default 8)
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "softplus.h"

using namespace ag;

int main(int argc, char** argv) {
  if (argc > 2) {
    std::fprintf(stderr, "usage: custom_function [N]\n");
    return 2;
  }
  const long long n = argc == 2 ? std::atoll(argv[1]) : 8;
  if (n < 1) {
    std::fprintf(stderr, "custom_function: N must be a positive number, got '%s'\n", argv[1]);
    return 2;
  }
  try {
    Generator gen(0);
    // float64 leaves, spread over [-6, 6]: both tails and the middle of softplus.
    const Tensor x = (Tensor::randn({n}, DType::Float64, gen) * 3.0).detach().requires_grad_();
    const GradcheckFn f = [](const std::vector<Tensor>& in) { return custom_function::Softplus::apply(in[0]); };

    const GradcheckReport first = gradcheck(f, {x}, {}, {"x"});
    std::printf("gradcheck (first order):\n%s", first.table().c_str());
    const GradcheckReport second = gradgradcheck(f, {x}, {}, {"x"});
    std::printf("gradgradcheck (second order):\n%s", second.table().c_str());

    // Used like any op: the gradient of a loss through it is sigmoid(x) per element.
    Tensor loss = custom_function::Softplus::apply(x).sum();
    loss.backward();
    const double err = (x.grad() - x.sigmoid()).abs().amax().item();
    std::printf("softplus(x).sum() = %.6f, max |x.grad - sigmoid(x)| = %.3g\n", loss.item(), err);

    const bool ok = first.passed() && second.passed() && err < 1e-15;
    std::printf("%s\n", ok ? "gradients check" : "a gradient check FAILED");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "custom_function: %s\n", e.what());
    return 1;
  }
}
