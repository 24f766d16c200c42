// ModuleDict: child modules by name, in insertion order, as torch's. Its parameters read
// "<key>.<name>"; it has no forward of its own (the owner picks the module to call).
//
//   nn::ModuleDict heads{{"cls", std::make_shared<nn::Linear>(8, 3)}, {"reg", std::make_shared<nn::Linear>(8, 1)}};
//   Tensor y = heads["cls"]->forward(h);
//   heads.update({{"aux", std::make_shared<nn::Linear>(8, 2)}});  heads.pop("reg");
//   for (const auto& [key, module] : heads) ...
#pragma once
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"
#include "nn/ordered_dict.h"

namespace ag::nn {

class ModuleDict : public Module {
 public:
  using Dict = OrderedDict<std::string, std::shared_ptr<Module>>;
  using Item = Dict::Item;
  using NamedModule = std::pair<std::string, std::shared_ptr<Module>>;

  ModuleDict() = default;
  ModuleDict(std::initializer_list<NamedModule> items);
  explicit ModuleDict(const std::vector<NamedModule>& items);
  explicit ModuleDict(const Dict& items);

  // Adds key, or replaces the module under it in its place (torch's dict[key] = module).
  void insert(const std::string& key, std::shared_ptr<Module> m);
  // insert() for each item, in order (torch's update).
  void update(std::initializer_list<NamedModule> items) { update(std::vector<NamedModule>(items)); }
  void update(const std::vector<NamedModule>& items);
  void update(const Dict& items);
  void update(const ModuleDict& other);
  // Removes key and returns its module; throws "Key 'x' is not defined" when it is not there.
  std::shared_ptr<Module> pop(const std::string& key);
  void clear();

  const std::shared_ptr<Module>& operator[](const std::string& key) const { return modules_[key]; }  // throws naming a missing key
  // The module under key as an M; throws if it is not one.
  template <class M> M& at(const std::string& key) const {
    M* m = dynamic_cast<M*>((*this)[key].get());
    if (!m) throw std::invalid_argument("ModuleDict: '" + key + "' is a " + (*this)[key]->name() + ", not the type asked for");
    return *m;
  }
  bool contains(const std::string& key) const { return modules_.contains(key); }
  std::vector<std::string> keys() const { return modules_.keys(); }
  std::vector<std::shared_ptr<Module>> values() const { return modules_.values(); }
  const std::vector<Item>& items() const { return modules_.items(); }
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.is_empty(); }
  bool is_empty() const { return modules_.is_empty(); }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  Dict modules_;
};

}  // namespace ag::nn
