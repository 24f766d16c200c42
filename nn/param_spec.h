// What a module says about each parameter where it registers it (Module::register_parameter):
// its shape, its initialisation, the optimizer group it belongs to and its matmul uses. A model
// is described once, by its modules: its parameter table (models/param_table.h) is these
// descriptions collected, and its parameters are initialised from them.
#pragma once
#include <cstdint>

#include "autograd/random.h"
#include "autograd/tensor.h"

namespace ag::nn {

// How an optimizer treats a parameter (nanoGPT's grouping, plus the matrices an optimizer such
// as Muon orthogonalises):
//   Decay    ≥ 2 dims, weight decay on, but not a hidden matrix: embeddings, the output head
//   NoDecay  biases and norm gains (1 dim): no weight decay
//   Matrix   the hidden layers' weight matrices: weight decay on (AdamW), or Muon's
enum class OptimGroup { Decay, NoDecay, Matrix };
const char* group_name(OptimGroup g);  // "decay", "no_decay", "matrix"

// An initialisation, as torch.nn.init's: a constant, N(0, std²) or U(−b, b).
struct Init {
  enum class Kind { Zeros, Ones, Normal, Uniform, Constant } kind = Kind::Zeros;
  // Normal: the standard deviation (mean 0); Uniform: the bound b of U(-b, b); Constant: the value
  double scale = 0;
  static Init zeros() { return {Kind::Zeros, 0}; }
  static Init ones() { return {Kind::Ones, 0}; }
  static Init constant(double value) { return {Kind::Constant, value}; }
  static Init normal(double std) { return {Kind::Normal, std}; }
  static Init uniform(double bound) { return {Kind::Uniform, bound}; }

  // Fills t (nn/init.h's functions), drawing from gen.
  void apply(Tensor& t, Generator& gen) const;
  // Advances gen exactly as apply() on a contiguous tensor of `numel` elements of `dtype`
  // would. An attograd generator is skipped without writing anything: a uniform value is one
  // draw, normal ones come in Box-Muller pairs (a spare left over is computed); a torch
  // generator's draws depend on the dtype and the count (torch's blocks of 16), and are drawn
  // into scratch memory and thrown away.
  void skip(Generator& gen, int64_t numel, DType dtype) const;
  bool operator==(const Init&) const = default;
};

struct ParamSpec {
  Shape shape;
  Init init;
  OptimGroup group = OptimGroup::NoDecay;
  // Multiply-adds each element does per position in the forward pass: 1 for the weight of a
  // matmul applied at every position (and for an embedding that is also the tied output
  // head), 0 for a bias, a norm's gain or an embedding that is only looked up.
  int64_t matmul_uses = 0;
  bool operator==(const ParamSpec&) const = default;
};

}  // namespace ag::nn
