// The bad inputs that torch's Python front raises as something other than RuntimeError, as
// c10's IndexError, TypeError and ValueError do. Each is a std::invalid_argument, like every other
// bad input of attograd, so C++ callers catch them as before; the Python package raises
// IndexError, TypeError and ValueError for them (python/src/errors.cpp).
#pragma once
#include <stdexcept>

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

}  // namespace ag
