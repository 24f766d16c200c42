// Runtime element types. Training runs in float32, gradient checks in float64; token ids are
// int64 and masks are bool (one byte per element).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace ag {

enum class DType : uint8_t { Float32, Float64, Int64, Bool };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
  }
  return 0;
}
constexpr bool is_floating(DType t) { return t == DType::Float32 || t == DType::Float64; }
const char* dtype_name(DType t);  // "float32", "float64", "int64", "bool"
// torch's ScalarType names, as its error messages spell them: "Float", "Double", "Long", "Bool".
constexpr const char* scalar_type_name(DType t) {
  switch (t) {
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Int64: return "Long";
    case DType::Bool: return "Bool";
  }
  return "?";
}

template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::Float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::Float64; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };
template <class T> constexpr DType dtype_of = DTypeOf<T>::value;

}  // namespace ag
