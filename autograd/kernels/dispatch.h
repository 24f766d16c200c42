// Runtime dtype -> compile-time element type. The lambda body sees `scalar_t`.
#pragma once
#include <stdexcept>
#include <string>

#include "autograd/dtype.h"

#define AG_DISPATCH_FLOAT(DT, OPNAME, ...)                                                        \
  [&] {                                                                                          \
    switch (DT) {                                                                                \
      case ::ag::DType::Float32: { using scalar_t = float; return __VA_ARGS__(); }               \
      case ::ag::DType::Float64: { using scalar_t = double; return __VA_ARGS__(); }              \
      default:                                                                                   \
        throw std::invalid_argument(std::string(OPNAME) + ": expected a float32 or float64 tensor, got " + \
                                    ::ag::dtype_name(DT));                                       \
    }                                                                                            \
  }()

#define AG_DISPATCH_ALL(DT, OPNAME, ...)                                                          \
  [&] {                                                                                          \
    switch (DT) {                                                                                \
      case ::ag::DType::Float32: { using scalar_t = float; return __VA_ARGS__(); }               \
      case ::ag::DType::Float64: { using scalar_t = double; return __VA_ARGS__(); }              \
      case ::ag::DType::Int64: { using scalar_t = int64_t; return __VA_ARGS__(); }               \
      case ::ag::DType::Bool: { using scalar_t = bool; return __VA_ARGS__(); }                   \
    }                                                                                            \
    throw std::invalid_argument(std::string(OPNAME) + ": unknown dtype");                       \
  }()
