// torch's CPU generator, in attograd's words: the mt19937 engine torch seeds (ATen's
// CPUGeneratorImpl), the Box-Muller value it keeps for the next normal draw, its state as the
// 5056 bytes torch.get_rng_state() gives, and the transforms torch's CPU kernels apply to its
// words (ATen's DistributionsHelper.h, TransformationHelper.h and cpu/DistributionTemplates.h,
// read to learn the algorithms; every one checked bit for bit against torch 2 by the fixtures of
// tests/autograd/test_torch_stream.cpp). autograd/random_ops.cpp draws tensors with these.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace ag {

// Which build of torch's CPU kernels torch runs: its AVX2 build (also what an AVX-512 CPU runs
// for normal_) on a CPU with AVX2 and FMA, its default build otherwise, or when
// ATEN_CPU_CAPABILITY=default says so. The two compute some draws differently: the AVX2 build
// fuses multiply-adds (uniform_'s from + x·(to − from), normal_'s mean + x·std) and computes
// float normal_'s log, sin and cos with Cephes polynomials rather than libm.
enum class TorchKernels { Default, Avx2 };
TorchKernels torch_kernels();
// Tests run both: force one build (nullopt: this CPU's again).
void set_torch_kernels_for_testing(std::optional<TorchKernels> k);

class TorchStream {
 public:
  static constexpr size_t kStateBytes = 5056;  // sizeof(CPUGeneratorImplState)
  using StateBytes = std::array<unsigned char, kStateBytes>;

  void seed(uint64_t seed);  // the engine takes the low 32 bits; initial_seed() keeps all 64
  uint64_t initial_seed() const { return seed_; }

  uint32_t random();     // one engine word
  uint64_t random64();   // two words, the first the high half
  double uniform();      // uniform_real_distribution<double>(0, 1): 53 bits of random64()
  float uniform_float(); // uniform_real_distribution<float>(0, 1): 24 bits of random()
  // normal_distribution<double>(0, 1): Box-Muller on two uniform() draws; the sine half is
  // kept and returned by the next call.
  double normal();
  // uniform_int_from_to_distribution: (word % range) + base, the word 64 bits wide from a
  // range of 2^28 up (the "approx 5% skew" threshold of torch's public builds), 32 otherwise.
  int64_t random_from_to(uint64_t range, int64_t base);

  StateBytes state_bytes() const;
  // std::invalid_argument when the bytes are not a valid state (torch's "Invalid mt19937 state").
  void set_state_bytes(const StateBytes& bytes);

 private:
  void twist();
  uint64_t seed_ = 0;
  int left_ = 1;        // words until the next twist, plus one (torch's counter)
  uint32_t next_ = 0;   // the next word's index
  std::array<uint32_t, 624> mt_{};
  std::optional<double> next_double_normal_;
  std::optional<float> next_float_normal_;  // never set by the CPU kernels; kept for the state's bytes
};

// ---- torch's CPU kernels on contiguous memory --------------------------------------------------
// uniform_(from, to): each element one draw, from + x·(to − from) in the tensor's dtype.
void torch_uniform_fill(float* p, int64_t n, double from, double to, TorchStream& s);
void torch_uniform_fill(double* p, int64_t n, double from, double to, TorchStream& s);
// normal_(mean, std) of a contiguous tensor of 16 or more elements: every element's uniform
// drawn first, then Box-Muller on the pairs (j, j + 8) of each block of 16; a last partial block
// is redrawn as the final 16 elements. (Smaller or strided tensors take torch_normal_value.)
void torch_normal_fill(float* p, int64_t n, double mean, double std, TorchStream& s);
void torch_normal_fill(double* p, int64_t n, double mean, double std, TorchStream& s);
// normal_ element by element: mean + z·std of the next normal() z (in double).
double torch_normal_value(double mean, double std, TorchStream& s);

}  // namespace ag
