// The bad inputs that torch's Python front raises as something other than RuntimeError, as
// c10's IndexError, TypeError and ValueError do. Each is a std::invalid_argument, like every other
// bad input of attograd, so C++ callers catch them as before; the Python package raises
// IndexError, TypeError and ValueError for them (python/src/errors.cpp).
#pragma once
#include <new>
#include <stdexcept>
#include <string>

namespace ag {

struct IndexError : std::invalid_argument {  // a dim or an index out of range
  using std::invalid_argument::invalid_argument;
};
struct TypeError : std::invalid_argument {  // an argument of the wrong kind
  using std::invalid_argument::invalid_argument;
};
struct ValueError : std::invalid_argument {  // an argument of the right kind with a value not allowed
  using std::invalid_argument::invalid_argument;
};

// A tensor's memory could not be had: more bytes than the machine, its cgroup or `ulimit -v`
// allows, or than the allocator found. A std::bad_alloc, as C++ callers expect, that says how many
// bytes were asked for; Python raises attograd.OutOfMemoryError (a MemoryError and a RuntimeError,
// as torch raises RuntimeError for a CPU allocation that fails).
struct OutOfMemoryError : std::bad_alloc {
  explicit OutOfMemoryError(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace ag
