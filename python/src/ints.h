// Python ints as the int64 values C++ needs: exact, or torch's exception naming the argument, never
// a wrapped value or "std::bad_cast". Every int that crosses into C++ as an index, a dim, a size
// or an int64 element goes through here (nanobind's own int64_t parameters refuse out-of-range
// ints by themselves, with a TypeError).
#pragma once
#include <cstdint>
#include <optional>

#include "common.h"

namespace agpy {

// An int argument (an index, a dim, a count): a Python int or anything with __index__ (NumPy's
// ints, a one-element int tensor). Out of int64's range: ValueError("Overflow when unpacking long
// long", as torch) naming `what`; not an int: TypeError naming `what`.
int64_t int64_arg(nb::handle h, const char* what);

// An int's value when it fits int64, else std::nullopt (h must be an int or have __index__).
std::optional<int64_t> int64_if_fits(nb::handle h);

// A float value stored into an int64 tensor (tensor([2.5], dtype=int64), full(..., dtype=int64)):
// truncated as torch does; NaN, an infinity or a value out of int64's range is torch's
// RuntimeError instead of undefined behaviour.
int64_t int64_from_double(double v);

// "18446744073709551616", or "an int of 5000 bits" for one too long to print.
std::string describe_int(nb::handle h);

}  // namespace agpy
