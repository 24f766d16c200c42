// ModuleDict: child modules by name, in insertion order, as torch's. Its parameters read
// "<key>.<name>"; it has no forward of its own (the owner picks the module to call).
//
//   nn::ModuleDict heads{{"cls", std::make_shared<nn::Linear>(8, 3)}, {"reg", std::make_shared<nn::Linear>(8, 1)}};
//   Tensor y = heads["cls"]->forward(h);
#pragma once
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace ag::nn {

class ModuleDict : public Module {
 public:
  using Item = std::pair<std::string, std::shared_ptr<Module>>;
  ModuleDict() = default;
  ModuleDict(std::initializer_list<Item> items);

  // Adds key, or replaces the module under it in place (torch's dict[key] = module).
  void insert(const std::string& key, std::shared_ptr<Module> m);
  const std::shared_ptr<Module>& operator[](const std::string& key) const;  // throws naming a missing key
  bool contains(const std::string& key) const;
  std::vector<std::string> keys() const;
  std::vector<std::shared_ptr<Module>> values() const;
  const std::vector<Item>& items() const { return items_; }
  size_t size() const { return items_.size(); }

 private:
  std::vector<Item> items_;
};

}  // namespace ag::nn
