// Indexing, as libtorch's Tensor::index and index_put_ (torch/csrc/api's TensorIndexing), which
// spell Python's x[...]:
//
//   using namespace ag::indexing;
//   x.index({0})                    // x[0]
//   x.index({Slice(1, None), 2})    // x[1:, 2]
//   x.index({Ellipsis, Slice(None, None, 2)})  // x[..., ::2]
//   x.index({None, idx})            // x[None, idx], idx an int64 tensor (or a bool mask)
//   x.index_put_({Slice(), 0}, 1.0) // x[:, 0] = 1
//   x[1][2] = 5;                    // x[1][2] = 5 (x[i] is a view; assigning to it writes)
//
// Integers, slices, None, Ellipsis and booleans give views of x (differentiable); a tensor index
// (int64 positions along one dim, or a bool mask over one or more dims, where its true elements
// are taken in row-major order) gives a copy, as torch's. One tensor index per call. index_put_
// writes through the same selection with the in-place semantics of tensor.h (recorded when
// grad mode is on and x or the value requires grad).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "autograd/tensor.h"

namespace ag {

namespace indexing {

// None: a new dim of size 1 as an index; an absent bound in a Slice.
inline constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};

// Python's start:stop:step; absent bounds (None) mean the whole dim, an absent step 1.
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step.value_or(1)) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_;
  int64_t step_;
};

}  // namespace indexing

// One entry of an index list: an integer, a Slice, None, Ellipsis ("..." too), a bool, or a Tensor.
struct TensorIndex {
  template <class I>
    requires(std::is_integral_v<I> && !std::is_same_v<I, bool>)
  TensorIndex(I integer) : value(static_cast<int64_t>(integer)) {}
  TensorIndex(bool b) : value(b) {}
  TensorIndex(indexing::Slice s) : value(s) {}
  TensorIndex(std::nullopt_t) : value(std::monostate{}) {}
  TensorIndex(indexing::EllipsisIndexType) : value(indexing::Ellipsis) {}
  TensorIndex(const char* s);  // "..." only
  TensorIndex(Tensor t) : value(std::move(t)) {}

  bool is_integer() const { return std::holds_alternative<int64_t>(value); }
  bool is_slice() const { return std::holds_alternative<indexing::Slice>(value); }
  bool is_none() const { return std::holds_alternative<std::monostate>(value); }
  bool is_ellipsis() const { return std::holds_alternative<indexing::EllipsisIndexType>(value); }
  bool is_boolean() const { return std::holds_alternative<bool>(value); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(value); }

  std::variant<std::monostate, int64_t, bool, indexing::Slice, indexing::EllipsisIndexType, Tensor> value;
};

}  // namespace ag
