// Module: the base of every layer, after torch::nn::Module. Parameters and submodules are
// registered by name, so named_parameters() yields dotted names such as
// "blocks.0.attn.out_proj.weight", and state_dict()/load_state_dict() use the same names.
//
// forward(x) is the single-input forward that Sequential chains and that a user's module
// overrides. It is const, as every forward in attograd: parameters are handles, so a forward
// never needs to change the module. Modules whose forward takes other arguments
// (MultiheadAttention) keep their own and leave this one, which throws naming the module.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"
#include "nn/ordered_dict.h"

namespace ag::nn {

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  // Movable, so that a module made by value can be handed over (Sequential::push_back(Linear(3,
  // 4)), Embedding::from_pretrained): its parameters, buffers and children are handles, which
  // move along with it.
  Module(Module&&) = default;
  Module& operator=(Module&&) = delete;

  virtual Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  // The class's name without namespaces ("Linear", "Net"), as torch's messages name a module.
  virtual std::string name() const;
  // This module as an M (libtorch's as<M>()), or nullptr when it is not one.
  template <class M> M* as() { return dynamic_cast<M*>(this); }
  template <class M> const M* as() const { return dynamic_cast<const M*>(this); }

  // Registers t (a leaf) as a parameter and returns the handle to keep as a member.
  Tensor register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  // Registers t as a buffer: state that is not trained (a loss's class weights), in
  // state_dict() and converted by to(dtype), as torch's. An undefined t is allowed and left out.
  Tensor register_buffer(const std::string& name, Tensor t);
  // Registers a child module; its parameters appear under "name.".
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }
  // Puts m in place of the child registered as name (same position); throws if there is none.
  void replace_module(const std::string& name, std::shared_ptr<Module> m);

  // Parameters in registration order, depth first, with dotted names ("0.weight"), as an
  // OrderedDict (nn/ordered_dict.h): indexed by name, iterated as (name, tensor) pairs. Without
  // recurse, this module's own only.
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  // The direct submodules by their names.
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;

  // Copies of the parameter and buffer handles by name (they share storage with the module).
  std::map<std::string, Tensor> state_dict() const;
  // Copies values into the parameters, converted to each parameter's dtype. As torch: with
  // strict, missing or unexpected names are errors; a shape mismatch always is. The error is a
  // std::runtime_error with torch's text ("Error(s) in loading state_dict for Net:\n\tMissing
  // key(s) in state_dict: \"2.bias\". ", "size mismatch for 0.weight: copying a param with
  // shape [8, 2] from checkpoint, the shape in current model is [8, 3]."). Unlike torch,
  // nothing is copied when it throws. Returns the keys that did not match (non-strict use).
  struct IncompatibleKeys {
    std::vector<std::string> missing_keys, unexpected_keys;
  };
  IncompatibleKeys load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();  // drops every parameter's .grad (torch 2's set_to_none)
  // Converts every parameter and floating buffer in place to dtype (e.g. float64 for
  // gradcheck); handles held by members and by users see the change, because the tensor's
  // storage is swapped inside it.
  void to(DType dtype);
  int64_t num_parameters() const;

 protected:
  // Removes the child registered as name (containers: ModuleDict::pop, clear); throws if none.
  void unregister_module(const std::string& name);

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> m);
  using Named = std::vector<std::pair<std::string, Tensor>>;
  void collect(const std::string& prefix, bool buffers, bool recurse, OrderedDict<std::string, Tensor>& out) const;

  Named params_;
  Named buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Labels every parameter tensor with its dotted name (Tensor::set_name), so that tools that
// see only tensors, such as the graph export, can say which parameter a leaf is.
void name_parameters(const Module& m);

}  // namespace ag::nn
