#include "nn/module_dict.h"

namespace ag::nn {

ModuleDict::ModuleDict(std::initializer_list<NamedModule> items) : ModuleDict(std::vector<NamedModule>(items)) {}

ModuleDict::ModuleDict(const std::vector<NamedModule>& items) { update(items); }

ModuleDict::ModuleDict(const Dict& items) { update(items); }

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> m) {
  if (modules_.contains(key)) {
    replace_module(key, m);
    modules_[key] = std::move(m);
    return;
  }
  modules_.insert(key, register_module(key, std::move(m)));
}

void ModuleDict::update(const std::vector<NamedModule>& items) {
  for (const auto& [k, m] : items) insert(k, m);
}

void ModuleDict::update(const Dict& items) {
  for (const auto& [k, m] : items) insert(k, m);
}

void ModuleDict::update(const ModuleDict& other) {
  const Dict items = other.modules_;  // other may be this one
  update(items);
}

std::shared_ptr<Module> ModuleDict::pop(const std::string& key) {
  std::shared_ptr<Module> m = modules_.pop(key);
  unregister_module(key);
  return m;
}

void ModuleDict::clear() {
  for (const std::string& k : modules_.keys()) unregister_module(k);
  modules_.clear();
}

}  // namespace ag::nn
