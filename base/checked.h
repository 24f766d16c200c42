// Checked size arithmetic: the one place where attograd multiplies and adds sizes that come
// from outside (flags, a file's metadata, a train state's configuration). A product that would
// not fit int64 throws std::overflow_error naming what was being computed, instead of wrapping
// into a small or negative size that later allocates the wrong amount or loops forever.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace ag::checked {

// a * b for a, b ≥ 0; throws std::overflow_error("<what>: ... does not fit 64 bits").
inline int64_t mul(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (a < 0 || b < 0) throw std::overflow_error(std::string(what) + ": negative size");
  if (__builtin_mul_overflow(a, b, &r))
    throw std::overflow_error(std::string(what) + ": " + std::to_string(a) + " x " + std::to_string(b) +
                              " does not fit 64 bits");
  return r;
}

// a + b for a, b ≥ 0; throws like mul.
inline int64_t add(int64_t a, int64_t b, const char* what) {
  int64_t r = 0;
  if (a < 0 || b < 0) throw std::overflow_error(std::string(what) + ": negative size");
  if (__builtin_add_overflow(a, b, &r))
    throw std::overflow_error(std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) +
                              " does not fit 64 bits");
  return r;
}

// The product of all factors (1 for none), checked at every step.
inline int64_t product(std::initializer_list<int64_t> factors, const char* what) {
  int64_t r = 1;
  for (int64_t f : factors) r = mul(r, f, what);
  return r;
}

}  // namespace ag::checked
