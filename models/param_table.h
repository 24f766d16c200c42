// One description of a model's parameters, as llm.c's fill_in_parameter_sizes: every tensor
// with its shape, initialisation, optimizer group and share of the forward pass's matmul
// FLOPs. Everything else about the parameters is derived from it:
//   * the names and shapes the model's modules register (init_parameters checks them at
//     construction, so the table cannot drift from the code);
//   * the initialisation (init_parameters draws it, row by row, in the table's order);
//   * the size before anything is built: tensor count, parameter count, the shapes a checkpoint
//     must hold, the memory estimate (models/model_size.h), all with checked arithmetic;
//   * the matmul FLOPs of a forward pass (LanguageModel::forward_flops, hence the MFU);
//   * the optimizer groups (names(OptimGroup)).
// Layers are one set of rows repeated, so a table has a handful of rows whatever n_layer is
// (a configuration read from a file may claim 2^31 layers; its size is computed, not listed).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"

namespace ag::nn {
class Module;
}

namespace ag::models {

// How an optimizer treats a parameter (nanoGPT's grouping, plus the matrices an optimizer such
// as Muon orthogonalises):
//   Decay    ≥ 2 dims, weight decay on, but not a hidden matrix: embeddings, the output head
//   NoDecay  biases and LayerNorm gains (1 dim): no weight decay
//   Matrix   the hidden layers' weight matrices: weight decay on (AdamW), or Muon's
enum class OptimGroup { Decay, NoDecay, Matrix };
const char* group_name(OptimGroup g);  // "decay", "no_decay", "matrix"

struct Init {
  enum class Kind { Zeros, Ones, Normal, Uniform } kind = Kind::Zeros;
  double scale = 0;  // Normal: the standard deviation (mean 0); Uniform: the bound b of U(-b, b)
  static Init zeros() { return {Kind::Zeros, 0}; }
  static Init ones() { return {Kind::Ones, 0}; }
  static Init normal(double std) { return {Kind::Normal, std}; }
  static Init uniform(double bound) { return {Kind::Uniform, bound}; }
};

struct ParamSpec {
  std::string name;  // in a layer row, after the layer's prefix: "ln1.weight" in "blocks.3.ln1.weight"
  Shape shape;
  Init init;
  OptimGroup group;
  // Multiply-adds each element does per position in the forward pass: 1 for the weight of a
  // matmul applied at every position (and for an embedding that is also the tied output
  // head), 0 for a bias, a LayerNorm gain or an embedding that is only looked up.
  int64_t matmul_uses = 0;
};

struct ParamTable {
  std::vector<ParamSpec> first;      // before the layers, in registration order
  std::string layer_prefix;          // "blocks.": layer i's rows are named "blocks.<i>.<name>"
  int64_t layers = 0;
  std::vector<ParamSpec> per_layer;  // each layer's rows
  std::vector<ParamSpec> last;       // after the layers
  // Matmul FLOPs per position between activations rather than with a parameter (attention's
  // q·kᵀ and weights·v), summed over the layers.
  double activation_matmul_flops_per_position = 0;

  // The rows expanded, in registration order: f(full name, row).
  void for_each(const std::function<void(const std::string&, const ParamSpec&)>& f) const;
  // Checked: throw std::overflow_error when they do not fit 64 bits.
  int64_t num_tensors() const;
  int64_t num_parameters() const;
  // (name, shape) of every tensor in registration order: what named_parameters() yields.
  // Lists num_tensors() entries; check that count before expanding a table read from a file.
  std::vector<std::pair<std::string, Shape>> shapes() const;
  // The parameter names of one optimizer group, in registration order.
  std::vector<std::string> names(OptimGroup g) const;
  // The Decay rows no matmul reads: tables that are only looked up (an untied token embedding,
  // a position table), which the speedrun's recipe trains at a learning rate of their own.
  std::vector<std::string> lookup_tables() const;
  // Matmul FLOPs of a forward pass over `positions` positions (batch × sequence length);
  // a backward costs twice that.
  double forward_flops(int64_t positions) const;
};

// Checks that m's named_parameters() are exactly the table's (names, shapes and order; throws
// std::logic_error naming the first difference), then initialises each as its row says, in
// order, drawing from gen.
void init_parameters(nn::Module& m, const ParamTable& table, Generator& gen);

}  // namespace ag::models
