#include "nn/sequential.h"

#include <string>

namespace ag::nn {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) push_back(m);
}

Sequential::Sequential(std::initializer_list<NamedModule> named_modules) {
  for (const auto& [name, m] : named_modules) push_back(name, m);
}

void Sequential::push_back(std::shared_ptr<Module> m) { push_back(std::to_string(items_.size()), std::move(m)); }

void Sequential::push_back(const std::string& name, std::shared_ptr<Module> m) {
  items_.push_back(register_module(name, std::move(m)));
}

void Sequential::extend(const Sequential& other) {
  const std::vector<std::shared_ptr<Module>> modules = other.items_;  // other may be this one
  for (const auto& m : modules) push_back(m);
}

const std::shared_ptr<Module>& Sequential::ptr(size_t i) const {
  if (i >= items_.size())
    throw std::out_of_range("Index out of range (Sequential: index " + std::to_string(i) + ", size " +
                            std::to_string(items_.size()) + ")");
  return items_[i];
}

Tensor Sequential::forward(const Tensor& x) const {
  Tensor h = x;
  for (const auto& m : items_) h = m->forward(h);
  return h;
}

}  // namespace ag::nn
