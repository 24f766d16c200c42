// Linear: y = x·Wᵀ + b with weight [out, in] and bias [out], initialised as PyTorch does
// (kaiming-uniform weight, U(−1/√in, 1/√in) bias).
#pragma once
#include "nn/module.h"

namespace ag::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, DType dtype = DType::Float32,
         Generator& gen = default_generator());
  Tensor forward(const Tensor& x) const override;  // (..., in) -> (..., out)

  int64_t in_features, out_features;
  Tensor weight;  // (out, in)
  Tensor bias;    // (out), or undefined
};

}  // namespace ag::nn
