// IValue: a small dynamically typed value, the few types libtorch's c10::IValue holds that a
// custom Function's backward needs from its forward (AutogradContext::saved_data, function.h):
// none, bool, int, double, string, int list, double list, Tensor. The accessors are libtorch's
// (toInt(), toDouble(), ...) and throw naming both types on a mismatch, as libtorch's do.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "autograd/tensor.h"

namespace ag {

class IValue {
 public:
  IValue() = default;
  IValue(bool v) : v_(v) {}
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
  IValue(I v) : v_(static_cast<int64_t>(v)) {}
  IValue(double v) : v_(v) {}
  IValue(std::string v) : v_(std::move(v)) {}
  IValue(const char* v) : v_(std::string(v)) {}
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}
  IValue(std::vector<double> v) : v_(std::move(v)) {}
  IValue(Tensor v) : v_(std::move(v)) {}

  bool isNone() const { return v_.index() == 0; }
  bool isBool() const { return v_.index() == 1; }
  bool isInt() const { return v_.index() == 2; }
  bool isDouble() const { return v_.index() == 3; }
  bool isString() const { return v_.index() == 4; }
  bool isIntList() const { return v_.index() == 5; }
  bool isDoubleList() const { return v_.index() == 6; }
  bool isTensor() const { return v_.index() == 7; }

  bool toBool() const { return get<bool>("Bool"); }
  int64_t toInt() const { return get<int64_t>("Int"); }
  double toDouble() const { return get<double>("Double"); }
  const std::string& toStringRef() const { return get<std::string>("String"); }
  const std::vector<int64_t>& toIntVector() const { return get<std::vector<int64_t>>("IntList"); }
  const std::vector<double>& toDoubleVector() const { return get<std::vector<double>>("DoubleList"); }
  const Tensor& toTensor() const { return get<Tensor>("Tensor"); }

  // "None", "Bool", "Int", "Double", "String", "IntList", "DoubleList" or "Tensor".
  const char* tagKind() const {
    static constexpr const char* kinds[] = {"None", "Bool", "Int", "Double", "String", "IntList", "DoubleList", "Tensor"};
    return kinds[v_.index()];
  }

 private:
  template <class T> const T& get(const char* kind) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    throw std::invalid_argument(std::string("IValue: expected ") + kind + " but got " + tagKind());
  }

  std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, Tensor> v_;
};

}  // namespace ag
