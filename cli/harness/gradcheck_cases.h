// The one table of gradient-check cases: every op of autograd/ops.h on small float64 inputs.
// tests/autograd/test_ops_gradcheck.cpp runs each case (and fails when an op of ops.h has no case),
// and `attograd gradcheck ops` prints them as a table; both check first and second order.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/random.h"
#include "autograd/tensor.h"

namespace ag {

// Where an op is smooth, so that central differences with a small eps are meaningful.
enum class Domain {
  Any,           // standard normal
  Positive,      // 0.5 + |normal|: log, sqrt, a divisor, a fractional power
  AwayFromZero,  // |x| >= 0.2: relu, abs (no kink within eps)
};

struct OpCase {
  std::string op;     // the function of ops.h that the case checks, e.g. "matmul"
  std::string label;  // what is special about it, e.g. "vector @ matrix"; may be empty
  std::vector<std::pair<std::string, Shape>> args;  // name and shape of each checked input
  Domain domain = Domain::Any;
  GradcheckFn f;
  std::string title() const { return label.empty() ? op : op + " (" + label + ")"; }
};

// Every case, in the order of ops.h. Built afresh on each call (cases hold index tensors).
std::vector<OpCase> op_cases();

// The functions of ops.h that need no case because no gradient flows through them: their
// results are integers or bools (argmax, argmin, the comparisons).
const std::vector<std::string>& ops_without_gradient();

// The case's inputs: float64 leaves that require grad, drawn from gen within its domain.
std::vector<Tensor> draw_inputs(const OpCase& c, Generator& gen);

}  // namespace ag
