// In-place initialisers with PyTorch's names and formulas (torch.nn.init), drawing from the
// framework's generator (as autograd/random_ops.h's uniform_ and normal_: a torch generator
// gives torch's numbers). They never record in the graph.
#pragma once
#include "autograd/tensor.h"

namespace ag::nn::init {

void uniform_(Tensor& t, double lo, double hi, Generator& gen = default_generator());
void normal_(Tensor& t, double mean, double std, Generator& gen = default_generator());
void zeros_(Tensor& t);
void ones_(Tensor& t);
void constant_(Tensor& t, double value);
// U(−b, b) with b = xavier_uniform_bound(fan_in, fan_out, gain).
void xavier_uniform_(Tensor& t, double gain = 1.0, Generator& gen = default_generator());
// PyTorch's Linear default: kaiming_uniform(a=√5), i.e. U(−b, b) with b = 1/√fan_in.
void kaiming_uniform_linear_(Tensor& t, Generator& gen = default_generator());
// (fan_in, fan_out) of a 2-d weight [out, in].
std::pair<int64_t, int64_t> fans(const Tensor& t);

// The bounds, computed as torch.nn.init computes them (the same double, so that a float64
// parameter drawn from a torch generator gets torch's values):
//   xavier:  gain·√(2 / (fan_in + fan_out)), then ·√3
//   kaiming: leaky-ReLU gain √(2 / (1 + a²)), /√fan, then ·√3 (a = √5: 1/√fan up to rounding)
double xavier_uniform_bound(int64_t fan_in, int64_t fan_out, double gain = 1.0);
double kaiming_uniform_bound(int64_t fan, double a);

}  // namespace ag::nn::init
