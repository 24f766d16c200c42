// Module: the base of every layer, after torch::nn::Module. Parameters and submodules are
// registered by name, so named_parameters() yields dotted names such as
// "blocks.0.attn.out_proj.weight", and state_dict()/load_state_dict() use the same names.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace ag::nn {

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Registers t (a leaf) as a parameter and returns the handle to keep as a member.
  Tensor register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  // Registers a child module; its parameters appear under "name.".
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }

  // Parameters in registration order, depth first, with dotted names.
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }

  // Copies of the parameter handles by name (they share storage with the module).
  std::map<std::string, Tensor> state_dict() const;
  // Copies values into the parameters. With strict, missing or unexpected names are errors;
  // a shape mismatch is always an error. Values are converted to each parameter's dtype.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true);

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad();
  // Converts every parameter in place to dtype (e.g. float64 for gradcheck); handles held by
  // members and by users see the change, because the tensor's storage is swapped inside it.
  void to(DType dtype);
  int64_t num_parameters() const;

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> m);
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;

  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Labels every parameter tensor with its dotted name (Tensor::set_name), so that tools that
// see only tensors, such as the graph export, can say which parameter a leaf is.
void name_parameters(const Module& m);

}  // namespace ag::nn
