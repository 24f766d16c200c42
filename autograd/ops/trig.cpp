// sin and cos. Each backward is written with ops (the other function), so with create_graph
// it is recorded and can be differentiated again, to any order.
#include <cmath>

#include "autograd/engine.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"

namespace ag {

Tensor sin(const Tensor& a) {
  AG_PROFILE_OP("sin");
  Tensor out = kernels::map_float(a, "sin", [](auto x) { return std::sin(x); });  // same shape as a
  if (should_record({&a}))
    // out = sin(a)  =>  da = g · cos(a)
    record(out, "sin", {a}, [sa = SavedTensor::save(a)](const Tensor& g) { return Grads{mul(g, cos(sa.unpack()))}; });
  return out;
}

Tensor cos(const Tensor& a) {
  AG_PROFILE_OP("cos");
  Tensor out = kernels::map_float(a, "cos", [](auto x) { return std::cos(x); });  // same shape as a
  if (should_record({&a}))
    // out = cos(a)  =>  da = −g · sin(a)
    record(out, "cos", {a}, [sa = SavedTensor::save(a)](const Tensor& g) { return Grads{neg(mul(g, sin(sa.unpack())))}; });
  return out;
}

}  // namespace ag
