// A run configuration that cannot work: a flag out of range, heads that do not divide the
// width, a model or batch too large for this machine. `attograd train` reports it as a usage
// error (exit status 2, with a --help hint) when it came from the command line.
#pragma once
#include <stdexcept>

namespace ag::train {

struct ConfigError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace ag::train
