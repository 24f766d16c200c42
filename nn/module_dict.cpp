#include "nn/module_dict.h"

#include <stdexcept>

namespace ag::nn {

ModuleDict::ModuleDict(std::initializer_list<Item> items) {
  for (const auto& [k, m] : items) insert(k, m);
}

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> m) {
  for (auto& [k, old] : items_)
    if (k == key) {
      replace_module(key, m);
      old = std::move(m);
      return;
    }
  items_.emplace_back(key, register_module(key, std::move(m)));
}

const std::shared_ptr<Module>& ModuleDict::operator[](const std::string& key) const {
  for (const auto& [k, m] : items_)
    if (k == key) return m;
  std::string known;
  for (const auto& [k, _] : items_) known += (known.empty() ? "" : ", ") + k;
  throw std::out_of_range("ModuleDict: no key '" + key + "' (keys: " + (known.empty() ? "none" : known) + ")");
}

bool ModuleDict::contains(const std::string& key) const {
  for (const auto& [k, _] : items_)
    if (k == key) return true;
  return false;
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, _] : items_) out.push_back(k);
  return out;
}

std::vector<std::shared_ptr<Module>> ModuleDict::values() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [_, m] : items_) out.push_back(m);
  return out;
}

}  // namespace ag::nn
