// The framework's own seedable random generator (xoshiro256**), so runs are reproducible and
// their state can be saved and restored exactly. No global rand(), no std:: distributions
// (whose output differs between standard libraries).
#pragma once
#include <array>
#include <cstdint>

namespace ag {

class Generator {
 public:
  explicit Generator(uint64_t seed = 1337) { manual_seed(seed); }
  void manual_seed(uint64_t seed);

  uint64_t next_u64();
  double uniform();                        // [0, 1), 53 random bits
  double uniform(double lo, double hi);    // [lo, hi)
  double normal();                         // N(0, 1), Box-Muller
  int64_t randint(int64_t lo, int64_t hi);  // uniform integer in [lo, hi), unbiased

  // Everything needed to continue the stream exactly: 4 words of xoshiro state, plus the
  // Box-Muller spare (flag and bit pattern).
  using State = std::array<uint64_t, 6>;
  State state() const;
  void set_state(const State& s);

 private:
  uint64_t s_[4]{};
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// The process-wide generator used when an op or initialiser is not given one.
Generator& default_generator();
inline void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace ag
