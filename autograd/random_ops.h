// Tensors drawn from a Generator, with torch's names: the in-place draws (Tensor.uniform_,
// normal_, random_, bernoulli_, exponential_), randperm, bernoulli and multinomial. Each draws
// as its generator's kind says (autograd/random.h): an attograd generator its own stream; a torch
// generator exactly the numbers torch's CPU kernels draw from the same state, element by element
// in the order torch visits them (memory order; the 53-bit or 24-bit, 32-bit or 64-bit words
// torch takes; a contiguous tensor's normal_ in torch's blocks of 16).
//
// In grad mode an in-place draw follows torch: refused on a leaf that requires grad; on a tensor
// in a graph it is recorded as a write whose old values get a zero gradient.
#pragma once
#include <cstdint>
#include <optional>

#include "autograd/random.h"
#include "autograd/tensor.h"

namespace ag {

// U(from, to) in a float tensor; torch's checks (from ≤ to, a finite span).
const Tensor& uniform_(const Tensor& t, double from = 0.0, double to = 1.0, Generator& gen = default_generator());
// N(mean, std²) in a float tensor; std ≥ 0.
const Tensor& normal_(const Tensor& t, double mean = 0.0, double std = 1.0, Generator& gen = default_generator());
// Integers in [from, to) in any dtype; to = nullopt: up to the dtype's largest (a float's 2^mantissa).
const Tensor& random_(const Tensor& t, int64_t from, std::optional<int64_t> to, Generator& gen = default_generator());
// random_(): in [0, 2^mantissa] for a float tensor, [0, 2^63) for int64, {0, 1} for bool.
const Tensor& random_(const Tensor& t, Generator& gen = default_generator());
// 1 with probability p, else 0.
const Tensor& bernoulli_(const Tensor& t, double p = 0.5, Generator& gen = default_generator());
// Each element with the probability at its place in p (broadcast to t's shape; a float tensor).
const Tensor& bernoulli_(const Tensor& t, const Tensor& p, Generator& gen = default_generator());
// Exp(lambda): −log(1 − u)/lambda; lambda > 0.
const Tensor& exponential_(const Tensor& t, double lambda = 1.0, Generator& gen = default_generator());

// 0 .. n−1 shuffled (torch's Fisher-Yates; from 2^32/20 up its inside-out variant on 64-bit words).
Tensor randperm(int64_t n, Generator& gen = default_generator(), DType dtype = DType::Int64);
// torch.bernoulli(p): 0/1 of p's dtype and shape, each 1 with its probability.
Tensor bernoulli(const Tensor& p, Generator& gen = default_generator());
// Category indices (int64) drawn from each row of probs (1-d, or 2-d: one row per distribution,
// weights that need not sum to one): with replacement, by inverting each row's cumulative sum at
// a uniform draw; without (or a single sample), the num_samples largest of p / Exp(1) (torch's
// exponential trick), largest first. torch's checks and messages.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false, Generator& gen = default_generator());

}  // namespace ag
