// Tensors from C++ literals of any rank and dtype, as libtorch's torch::tensor:
//
//   ag::tensor(3.5)                          // 0-d float32
//   ag::tensor({1, 2, 3})                    // int64 [3]
//   ag::tensor({{1.5, 2.0}, {3.0, 4.0}})     // float32 [2, 2]
//   ag::tensor({{true}, {false}})            // bool [2, 1]
//   ag::tensor({{1, 2}}, DType::Float64)     // float64 [1, 2]: the values converted
//   ag::tensor({})                           // float32 [0]
//
// Integers give int64, bools bool, floating literals float32 (torch's default dtype), a
// std::vector<double> float64; one
// literal mixes no kinds, and every sub-list of one level has the same sizes: both refusals
// are torch's messages. A std::vector<T> is a 1-d list.
#pragma once
#include <initializer_list>
#include <optional>
#include <type_traits>
#include <vector>

#include "autograd/tensor.h"

namespace ag {

namespace detail {

// A scalar or a (nested) list of them, with the sizes and the element kind checked as it is
// built, innermost list first (torch's TensorDataContainer).
class TensorDataContainer {
 public:
  TensorDataContainer();  // {}: an empty list
  TensorDataContainer(bool b);
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
  TensorDataContainer(I i) : TensorDataContainer(static_cast<int64_t>(i), DType::Int64) {}
  TensorDataContainer(float f);
  TensorDataContainer(double d);
  TensorDataContainer(std::initializer_list<TensorDataContainer> list);
  // A std::vector keeps its element type, as libtorch's: std::vector<double> is float64.
  template <class T>
  TensorDataContainer(const std::vector<T>& values) : TensorDataContainer() {
    std::vector<TensorDataContainer> elems;
    for (const T v : values) {
      if constexpr (std::is_same_v<T, double>) elems.push_back(TensorDataContainer(v, DType::Float64));
      else elems.emplace_back(v);
    }
    *this = TensorDataContainer(elems);
  }

  bool is_scalar() const { return scalar_; }
  const Shape& sizes() const { return sizes_; }
  DType scalar_type() const { return type_; }
  void values(std::vector<double>& out) const;  // row-major
  std::string str() const;                      // {1, 2} as torch prints it in its messages

 private:
  TensorDataContainer(int64_t i, DType type);
  TensorDataContainer(double d, DType type);
  explicit TensorDataContainer(const std::vector<TensorDataContainer>& list);

  bool scalar_ = false;
  double value_ = 0;
  Shape sizes_{0};
  DType type_ = DType::Float32;
  bool typed_ = false;  // false for an empty list (any kind fits it)
  std::vector<TensorDataContainer> elems_;
};

}  // namespace detail

// The tensor of a literal; dtype converts the values (a float to an integer truncates, as torch).
Tensor tensor(const detail::TensorDataContainer& data, std::optional<DType> dtype = std::nullopt);

}  // namespace ag
