// OrderedDict: values by key in insertion order, as libtorch's torch::OrderedDict. What a
// module's named_parameters(), named_buffers() and named_children() return:
//
//   auto params = model.named_parameters();
//   Tensor w = params["0.weight"];                     // by key (throws naming a missing key)
//   for (const auto& [name, p] : params) ...           // in order; an item is a (key, value) pair
//   for (const auto& item : params) item.key(), item.value(), item->shape();
//   params[0].key(), params.keys(), params.values(), params.contains("0.bias")
//
// An item is a std::pair, so code written for a vector of pairs (structured bindings, .first,
// .second, conversion to std::vector<std::pair<Key, Value>>) keeps working.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ag {

template <class Key, class Value>
class OrderedDict {
 public:
  class Item : public std::pair<Key, Value> {
   public:
    Item(Key key, Value value) : std::pair<Key, Value>(std::move(key), std::move(value)) {}
    const Key& key() const { return this->first; }
    Value& value() { return this->second; }
    const Value& value() const { return this->second; }
    Value& operator*() { return this->second; }
    const Value& operator*() const { return this->second; }
    Value* operator->() { return &this->second; }
    const Value* operator->() const { return &this->second; }
    const std::pair<Key, Value>& pair() const { return *this; }
  };

  // key_description names the keys in messages ("Key 'x' is not defined").
  explicit OrderedDict(std::string key_description = "Key") : key_description_(std::move(key_description)) {}
  OrderedDict(std::initializer_list<Item> items) {
    for (const Item& i : items) insert(i.key(), i.value());
  }

  // ---- lookup --------------------------------------------------------------------------------
  Value& operator[](const Key& key) { return items_[index_of(key)].second; }
  const Value& operator[](const Key& key) const { return items_[index_of(key)].second; }
  Item& operator[](size_t index) { return items_.at(check_index(index)); }
  const Item& operator[](size_t index) const { return items_.at(check_index(index)); }
  Value* find(const Key& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  const Value* find(const Key& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  bool contains(const Key& key) const { return index_.count(key) > 0; }

  // ---- modification --------------------------------------------------------------------------
  // Adds key; throws if it is there already ("Key 'x' already defined").
  Value& insert(const Key& key, Value value) {
    if (contains(key)) throw std::invalid_argument(key_description_ + " '" + key_str(key) + "' already defined");
    index_.emplace(key, items_.size());
    items_.emplace_back(key, std::move(value));
    return items_.back().second;
  }
  // Replaces the value under key in its place, or adds it at the end.
  Value& insert_or_assign(const Key& key, Value value) {
    if (Value* v = find(key)) return *v = std::move(value);
    return insert(key, std::move(value));
  }
  void update(const OrderedDict& other) {
    for (const Item& i : other) insert_or_assign(i.key(), i.value());
  }
  // Removes key and returns its value; throws naming a missing key.
  Value pop(const Key& key) {
    const size_t i = index_of(key);
    Value v = std::move(items_[i].second);
    items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(i));
    index_.erase(key);
    for (auto& [k, pos] : index_)
      if (pos > i) --pos;
    return v;
  }
  void erase(const Key& key) { pop(key); }
  void clear() {
    items_.clear();
    index_.clear();
  }
  void reserve(size_t n) {
    items_.reserve(n);
    index_.reserve(n);
  }

  // ---- the whole -----------------------------------------------------------------------------
  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  bool empty() const { return items_.empty(); }
  const std::vector<Item>& items() const { return items_; }
  std::vector<Key> keys() const {
    std::vector<Key> out;
    for (const Item& i : items_) out.push_back(i.key());
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    for (const Item& i : items_) out.push_back(i.value());
    return out;
  }
  std::vector<std::pair<Key, Value>> pairs() const { return {items_.begin(), items_.end()}; }
  operator std::vector<std::pair<Key, Value>>() const { return pairs(); }
  Item& front() { return items_.at(check_index(0)); }
  Item& back() { return items_.at(check_index(size() - 1)); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  const std::string& key_description() const { return key_description_; }

 private:
  static std::string key_str(const Key& key) {
    std::ostringstream os;
    os << key;
    return os.str();
  }
  size_t index_of(const Key& key) const {
    auto it = index_.find(key);
    if (it == index_.end()) {  // torch's message, then the first keys there are
      std::string known;
      for (size_t i = 0; i < items_.size() && i < 10; ++i) known += (i ? ", " : "") + key_str(items_[i].key());
      if (items_.size() > 10) known += ", ...";
      throw std::out_of_range(key_description_ + " '" + key_str(key) + "' is not defined (keys: " +
                              (known.empty() ? "none" : known) + ")");
    }
    return it->second;
  }
  size_t check_index(size_t index) const {
    if (index >= items_.size())
      throw std::out_of_range("Index " + std::to_string(index) + " is out of bounds (size " + std::to_string(items_.size()) + ")");
    return index;
  }

  std::unordered_map<Key, size_t> index_;
  std::vector<Item> items_;
  std::string key_description_ = "Key";
};

}  // namespace ag
