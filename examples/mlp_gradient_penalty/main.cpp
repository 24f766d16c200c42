// An MLP regression with a gradient penalty (create_graph), trained with ag::optim::Adam:
//
//   mlp_gradient_penalty [STEPS]     (default 300)
//
// The model, data and loss are in regression.h.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "regression.h"

int main(int argc, char** argv) {
  if (argc > 2) {
    std::fprintf(stderr, "usage: mlp_gradient_penalty [STEPS]\n");
    return 2;
  }
  const long long steps = argc == 2 ? std::atoll(argv[1]) : 300;
  if (steps < 1) {
    std::fprintf(stderr, "mlp_gradient_penalty: STEPS must be a positive number, got '%s'\n", argv[1]);
    return 2;
  }
  try {
    double first = 0, last = 0;
    mlp_gradient_penalty::train(steps, [&](int64_t step, double loss) {
      if (step == 0) first = loss;
      last = loss;
      if (step % 50 == 0 || step == steps - 1) std::printf("step %4lld  loss %.6f\n", static_cast<long long>(step), loss);
    });
    std::printf("loss %.6f -> %.6f\n", first, last);
    return last < first ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp_gradient_penalty: %s\n", e.what());
    return 1;
  }
}
