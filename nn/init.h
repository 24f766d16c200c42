// In-place initialisers with PyTorch's names and formulas (torch.nn.init), drawing from the
// framework's generator. They never record in the graph.
#pragma once
#include "autograd/tensor.h"

namespace ag::nn::init {

void uniform_(Tensor& t, double lo, double hi, Generator& gen = default_generator());
void normal_(Tensor& t, double mean, double std, Generator& gen = default_generator());
void zeros_(Tensor& t);
void ones_(Tensor& t);
void constant_(Tensor& t, double value);
// U(−b, b) with b = gain·√(6 / (fan_in + fan_out)).
void xavier_uniform_(Tensor& t, double gain = 1.0, Generator& gen = default_generator());
// PyTorch's Linear default: kaiming_uniform(a=√5), i.e. U(−b, b) with b = 1/√fan_in.
void kaiming_uniform_linear_(Tensor& t, Generator& gen = default_generator());
// (fan_in, fan_out) of a 2-d weight [out, in].
std::pair<int64_t, int64_t> fans(const Tensor& t);

}  // namespace ag::nn::init
