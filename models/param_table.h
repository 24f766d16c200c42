// One description of a model's parameters, as llm.c's fill_in_parameter_sizes: every tensor
// with its shape, initialisation, optimizer group and share of the forward pass's matmul
// FLOPs. Its rows are what the model's modules say where they register their parameters
// (nn/param_spec.h: Module::register_parameter, set_init, set_role), collected: the model is
// described once, by its modules, and its parameters are initialised from those descriptions.
// Everything else about the parameters is derived from the table:
//   * the size before anything is built: tensor count, parameter count, the shapes a checkpoint
//     must hold, the memory estimate (models/model_size.h), all with checked arithmetic;
//   * the matmul FLOPs of a forward pass (LanguageModel::forward_flops, hence the MFU);
//   * the optimizer groups (names(OptimGroup)).
// A model's table exists before the model: its constructor run under nn::MetaInit describes
// the parameters and allocates nothing. Layers are one set of rows repeated, described by a
// model built with one layer, so a table has a handful of rows whatever n_layer is (a
// configuration read from a file may claim 2^31 layers: its size is computed, not listed).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"
#include "nn/module.h"
#include "nn/param_spec.h"

namespace ag::models {

using nn::group_name;
using nn::Init;
using nn::OptimGroup;

struct ParamRow {
  std::string name;  // in a layer row, after the layer's prefix: "ln1.weight" in "blocks.3.ln1.weight"
  nn::ParamSpec spec;
};

struct ParamTable {
  std::vector<ParamRow> first;      // before the layers, in registration order
  std::string layer_prefix;         // "blocks.": layer i's rows are named "blocks.<i>.<name>"
  int64_t layers = 0;
  std::vector<ParamRow> per_layer;  // each layer's rows
  std::vector<ParamRow> last;       // after the layers
  // Matmul FLOPs per position between activations rather than with a parameter (attention's
  // q·kᵀ and weights·v), summed over the layers.
  double activation_matmul_flops_per_position = 0;

  // The table of the parameters `model` describes (nn::Module::named_param_specs), in
  // registration order. A model of repeated layers is described by one built with a single
  // layer, registered under layer_prefix + "0.": its rows are repeated `layers` times. Throws
  // std::logic_error for a parameter registered without a description, or a second layer.
  static ParamTable of(const nn::Module& model, const std::string& layer_prefix = "", int64_t layers = 0);

  // The rows expanded, in registration order: f(full name, description).
  void for_each(const std::function<void(const std::string&, const nn::ParamSpec&)>& f) const;
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

}  // namespace ag::models
