#include "nn/module.h"

#include <set>

#include "autograd/engine.h"

namespace ag::nn {

namespace {
void check_name(const std::string& name, const char* what) {
  if (name.empty() || name.find('.') != std::string::npos)
    throw std::invalid_argument(std::string("Module: invalid ") + what + " name '" + name + "' (non-empty, no dots)");
}
}  // namespace

Tensor Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_name(name, "parameter");
  for (const auto& [n, _] : params_)
    if (n == name) throw std::invalid_argument("Module: parameter '" + name + "' registered twice");
  if (!t.defined() || !t.is_leaf()) throw std::invalid_argument("Module: parameter '" + name + "' must be a defined leaf tensor");
  t.requires_grad_(requires_grad);
  params_.emplace_back(name, t);
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m) {
  check_name(name, "submodule");
  if (!m) throw std::invalid_argument("Module: submodule '" + name + "' is null");
  for (const auto& [n, _] : children_)
    if (n == name) throw std::invalid_argument("Module: submodule '" + name + "' registered twice");
  children_.emplace_back(name, std::move(m));
}

void Module::collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [n, t] : params_) out.emplace_back(prefix + n, t);
  for (const auto& [n, c] : children_) c->collect(prefix + n + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, t] : named_parameters()) out.push_back(t);
  return out;
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (auto& [n, t] : named_parameters()) out.emplace(n, t);
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  const auto params = named_parameters();
  std::set<std::string> expected;
  std::string missing;
  for (const auto& [n, t] : params) {
    expected.insert(n);
    auto it = state.find(n);
    if (it == state.end()) {
      missing += (missing.empty() ? "" : ", ") + n;
      continue;
    }
    if (it->second.shape() != t.shape())
      throw std::invalid_argument("load_state_dict: '" + n + "' has shape " + shape_str(it->second.shape()) +
                                  " in the state dict but " + shape_str(t.shape()) + " in the model");
  }
  std::string unexpected;
  for (const auto& [n, _] : state)
    if (!expected.count(n)) unexpected += (unexpected.empty() ? "" : ", ") + n;
  if (strict && (!missing.empty() || !unexpected.empty()))
    throw std::invalid_argument("load_state_dict: " + (missing.empty() ? "" : "missing keys: " + missing + ". ") +
                                (unexpected.empty() ? "" : "unexpected keys: " + unexpected + "."));
  NoGradGuard no_grad;
  for (auto& [n, t] : params) {
    auto it = state.find(n);
    if (it != state.end()) Tensor(t).copy_(it->second);
  }
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, c] : children_) c->train(on);
}

void Module::zero_grad() {
  for (auto& t : parameters()) t.zero_grad();
}

void Module::to(DType dtype) {
  for (auto& [n, t] : named_parameters()) {
    if (t.dtype() == dtype) continue;
    Tensor converted = t.detach().to(dtype);
    TensorImpl& impl = t.impl();
    impl.storage = converted.impl().storage;
    impl.offset = 0;
    impl.strides = converted.strides();
    impl.dtype = dtype;
    impl.grad.reset();
  }
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& t : parameters()) n += t.numel();
  return n;
}

void name_parameters(const Module& m) {
  for (auto& [n, t] : m.named_parameters()) t.set_name(n);
}

}  // namespace ag::nn
