// The framework's seedable random generator, so runs are reproducible and their state can be
// saved and restored exactly. No global rand(), no std:: distributions (whose output differs
// between standard libraries). A Generator draws one of two streams:
//   Attograd  xoshiro256** with attograd's own transforms: the C++ API's and the CLI's default;
//   Torch     torch's CPU generator (mt19937) with torch's own transforms (autograd/torch_stream.h):
//             after the same seed, the tensor draws of autograd/random_ops.h give the numbers
//             torch 2 gives. The Python front's default (python/src/bind_random.cpp).
// The scalar draws below follow the generator's kind; so do the tensor draws of random_ops.h.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "autograd/torch_stream.h"

namespace ag {

enum class GeneratorKind { Attograd, Torch };
const char* generator_kind_name(GeneratorKind k);  // "attograd", "torch"

class Generator {
 public:
  explicit Generator(uint64_t seed = 1337, GeneratorKind kind = GeneratorKind::Attograd) : kind_(kind) { manual_seed(seed); }
  // torch's generator, seeded as torch.manual_seed(seed) seeds it.
  static Generator torch(uint64_t seed) { return Generator(seed, GeneratorKind::Torch); }

  GeneratorKind kind() const { return kind_; }
  // Starts the stream of `seed` again (the kind stays).
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }  // the seed last given (torch.initial_seed)

  uint64_t next_u64();                      // 64 random bits (Torch: two engine words, high first)
  uint32_t next_u32();                      // 32 random bits (Torch: one engine word)
  double uniform();                         // [0, 1) from 53 random bits
  float uniform_float();                    // [0, 1) from 24 random bits
  double uniform(double lo, double hi);     // [lo, hi)
  double normal();                          // N(0, 1), Box-Muller; the pair's second value is kept for the next call
  int64_t randint(int64_t lo, int64_t hi);  // an integer in [lo, hi): random_from_to(hi − lo, lo)
  // base + an integer in [0, range) (range 0: all 2^64): Attograd unbiased (rejection), Torch
  // torch's word % range.
  int64_t random_from_to(uint64_t range, int64_t base);

  // The torch stream itself, for the tensor draws that follow torch's kernels (random_ops.cpp);
  // std::logic_error on an Attograd generator.
  TorchStream& torch_stream();

  // Everything needed to continue the stream exactly. Attograd: 6 words (xoshiro's 4 and the
  // Box-Muller spare: a flag and its bits). Torch: 632 words, the 5056 bytes of torch's own
  // get_rng_state() read as little-endian words, so that a state torch saved continues here.
  // set_state takes either and becomes that kind.
  using State = std::vector<uint64_t>;
  State state() const;
  void set_state(const State& s);

 private:
  GeneratorKind kind_;
  uint64_t seed_ = 0;
  uint64_t s_[4]{};  // Attograd: xoshiro256** state
  bool has_spare_ = false;
  double spare_ = 0.0;
  TorchStream torch_;  // Torch
};

// The process-wide generator used when an op or initialiser is not given one (Attograd, seed
// 1337, until someone changes it: default_generator() = Generator::torch(seed) makes it torch's).
Generator& default_generator();
inline void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace ag
