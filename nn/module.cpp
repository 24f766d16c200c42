#include "nn/module.h"

#include <cxxabi.h>

#include <cstdlib>
#include <set>
#include <stdexcept>
#include <typeinfo>

#include "autograd/engine.h"

namespace ag::nn {

namespace {
void check_name(const std::string& name, const char* what) {
  if (name.empty() || name.find('.') != std::string::npos)
    throw std::invalid_argument(std::string("Module: invalid ") + what + " name '" + name + "' (non-empty, no dots)");
}
}  // namespace

Tensor Module::forward(const Tensor&) const {
  // torch's NotImplementedError text, plus which forward is meant.
  throw std::logic_error("Module [" + name() + "] is missing the required \"forward\" function: forward(const Tensor&) "
                         "const, which operator() and Sequential call");
}

std::string Module::name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string full = status == 0 && d ? d : mangled;
  std::free(d);
  // "ag::nn::Linear" -> "Linear"; a template's arguments keep their namespaces.
  const size_t end = full.find('<');
  const size_t colon = full.rfind("::", end);
  return colon == std::string::npos ? full : full.substr(colon + 2);
}

Tensor Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_name(name, "parameter");
  for (const auto& [n, _] : params_)
    if (n == name) throw std::invalid_argument("Module: parameter '" + name + "' registered twice");
  for (const auto& [n, _] : buffers_)
    if (n == name) throw std::invalid_argument("Module: '" + name + "' is a buffer already");
  if (!t.defined() || !t.is_leaf()) throw std::invalid_argument("Module: parameter '" + name + "' must be a defined leaf tensor");
  t.requires_grad_(requires_grad);
  params_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  check_name(name, "buffer");
  for (const auto& [n, _] : buffers_)
    if (n == name) throw std::invalid_argument("Module: buffer '" + name + "' registered twice");
  for (const auto& [n, _] : params_)
    if (n == name) throw std::invalid_argument("Module: '" + name + "' is a parameter already");
  if (t.defined()) buffers_.emplace_back(name, t);
  return t;
}

void Module::unregister_module(const std::string& name) {
  for (auto it = children_.begin(); it != children_.end(); ++it)
    if (it->first == name) {
      children_.erase(it);
      return;
    }
  throw std::invalid_argument("Module: no submodule '" + name + "' to remove");
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m) {
  check_name(name, "submodule");
  if (!m) throw std::invalid_argument("Module: submodule '" + name + "' is null");
  for (const auto& [n, _] : children_)
    if (n == name) throw std::invalid_argument("Module: submodule '" + name + "' registered twice");
  children_.emplace_back(name, std::move(m));
}

void Module::replace_module(const std::string& name, std::shared_ptr<Module> m) {
  if (!m) throw std::invalid_argument("Module: submodule '" + name + "' is null");
  for (auto& [n, c] : children_)
    if (n == name) {
      c = std::move(m);
      return;
    }
  throw std::invalid_argument("Module: no submodule '" + name + "' to replace");
}

void Module::collect(const std::string& prefix, bool buffers, bool recurse, OrderedDict<std::string, Tensor>& out) const {
  for (const auto& [n, t] : buffers ? buffers_ : params_) out.insert(prefix + n, t);
  if (recurse)
    for (const auto& [n, c] : children_) c->collect(prefix + n + ".", buffers, true, out);
}

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<std::string, Tensor> out;
  collect("", false, recurse, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<std::string, Tensor> out;
  collect("", true, recurse, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const {
  OrderedDict<std::string, std::shared_ptr<Module>> out;
  for (const auto& [n, c] : children_) out.insert(n, c);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const { return named_children().values(); }

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  for (auto& [n, t] : named_parameters()) out.emplace(n, t);
  for (auto& [n, t] : named_buffers()) out.emplace(n, t);
  return out;
}

Module::IncompatibleKeys Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  // The checks and messages of torch's Module.load_state_dict: missing keys in parameter order,
  // unexpected keys in the state dict's order, then size mismatches in parameter order.
  std::vector<std::pair<std::string, Tensor>> params = named_parameters();
  for (auto& [n, t] : named_buffers()) params.emplace_back(n, t);
  IncompatibleKeys keys;
  std::set<std::string> expected;
  std::vector<std::string> mismatches;
  for (const auto& [n, t] : params) {
    expected.insert(n);
    auto it = state.find(n);
    if (it == state.end()) {
      keys.missing_keys.push_back(n);
      continue;
    }
    if (it->second.shape() != t.shape())
      mismatches.push_back("size mismatch for " + n + ": copying a param with shape " + shape_str(it->second.shape()) +
                           " from checkpoint, the shape in current model is " + shape_str(t.shape()) + ".");
  }
  for (const auto& [n, _] : state)
    if (!expected.count(n)) keys.unexpected_keys.push_back(n);
  auto quoted = [](const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "\"" : ", \"") + n + "\"";
    return out;
  };
  std::vector<std::string> errors;
  if (strict && !keys.missing_keys.empty()) errors.push_back("Missing key(s) in state_dict: " + quoted(keys.missing_keys) + ". ");
  if (strict && !keys.unexpected_keys.empty())
    errors.push_back("Unexpected key(s) in state_dict: " + quoted(keys.unexpected_keys) + ". ");
  errors.insert(errors.end(), mismatches.begin(), mismatches.end());
  if (!errors.empty()) {
    std::string msg = "Error(s) in loading state_dict for " + name() + ":";
    for (const auto& e : errors) msg += "\n\t" + e;
    throw std::runtime_error(msg);
  }
  NoGradGuard no_grad;
  for (auto& [n, t] : params) {
    auto it = state.find(n);
    if (it != state.end()) Tensor(t).copy_(it->second);
  }
  return keys;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, c] : children_) c->train(on);
}

void Module::zero_grad() {
  for (auto& t : parameters()) t.zero_grad();
}

void Module::to(DType dtype) {
  std::vector<Tensor> tensors = parameters();
  for (const Tensor& b : buffers())
    if (is_floating(b.dtype())) tensors.push_back(b);  // integer buffers keep their dtype, as torch's
  for (Tensor& t : tensors) {
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
