// Element formulas of torch's CPU kernels that the optimizers reproduce, so that a float64
// update stays within an ulp of torch's (tests/optim/test_optim_parity.cpp, tests/optim/test_muon.cpp).
#pragma once
#include <cmath>

namespace ag::optim {

// torch's lerp kernel: start + weight·(end − start) for weight < 0.5, else
// end − (1 − weight)·(end − start), as one fused multiply-add (vec::fmadd).
template <class T>
T torch_lerp(T start, T end, T weight) {
  return weight < T(0.5) ? std::fma(weight, end - start, start) : std::fma(weight - T(1), end - start, end);
}

}  // namespace ag::optim
