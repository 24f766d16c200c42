#include "nn/sequential.h"

#include <string>

namespace ag::nn {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> m) {
  items_.push_back(register_module(std::to_string(items_.size()), std::move(m)));
}

Tensor Sequential::forward(const Tensor& x) const {
  Tensor h = x;
  for (const auto& m : items_) h = m->forward(h);
  return h;
}

}  // namespace ag::nn
