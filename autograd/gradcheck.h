// Gradient check in float64: the analytic Jacobian (one backward per output element, with
// one-hot upstream gradients) against central differences (f(x+eps) − f(x−eps)) / 2eps, one
// input element at a time. Passes where |analytic − numeric| ≤ atol + rtol·|numeric| for every
// entry, the criterion of torch.autograd.gradcheck. Also checks that two backward runs with the
// same upstream gradient give identical results.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace ag {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

struct GradcheckInputReport {
  std::string name;
  Shape shape;
  double max_abs_err = 0;  // max |analytic − numeric| over the Jacobian entries of this input
  double max_rel_err = 0;  // max |analytic − numeric| / |numeric| over entries with |numeric| > atol
  int64_t failures = 0;    // entries that broke the criterion
  bool passed = true;
};

struct GradcheckReport {
  std::vector<GradcheckInputReport> inputs;  // one per input that requires grad
  bool reentrant = true;  // two backward passes agreed bit for bit
  bool passed() const;
  std::string table() const;  // one row per input: name, shape, max abs err, max rel err, PASS/FAIL
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// `inputs` must be float64 leaves; those that require grad are checked, the rest are held
// fixed. f may return a tensor of any shape. names label the rows (default "input i").
GradcheckReport gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& options = {},
                          const std::vector<std::string>& names = {});

// Second-order check, torch.autograd.gradgradcheck's criterion: with v a random upstream
// gradient (float64, fixed seed), the first-order gradients g(x, v) = grad(f(x), x, v,
// create_graph=true) are themselves gradchecked as a function of the checked inputs and of v
// (so the analytic side is a backward through the recorded backward pass: double backward).
// The report has one row per checked input and a last row "grad_output" for v.
GradcheckReport gradgradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs,
                              const GradcheckOptions& options = {}, const std::vector<std::string>& names = {},
                              uint64_t seed = 2024);

}  // namespace ag
