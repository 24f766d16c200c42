// torch's CPU generator and kernels (torch_stream.h). Compiled with -ffp-contract=off
// (CMakeLists.txt): every multiply-add torch's AVX2 build fuses is an explicit fma here, and
// nothing else is fused, whatever -march the build is given.
#include "autograd/torch_stream.h"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "autograd/kernels/multiversion.h"

namespace ag {

// ---- which kernels -----------------------------------------------------------------------------

namespace {
std::optional<TorchKernels> g_forced;

TorchKernels detect_kernels() {
  const char* env = std::getenv("ATEN_CPU_CAPABILITY");  // torch's own switch, read as torch reads it
  if (env && std::string(env) == "default") return TorchKernels::Default;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return TorchKernels::Avx2;
#endif
  return TorchKernels::Default;
}
}  // namespace

TorchKernels torch_kernels() {
  static const TorchKernels detected = detect_kernels();
  return g_forced ? *g_forced : detected;
}

void set_torch_kernels_for_testing(std::optional<TorchKernels> k) { g_forced = k; }

// ---- the engine --------------------------------------------------------------------------------

namespace {
constexpr int kN = 624, kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu, kUpper = 0x80000000u, kLower = 0x7fffffffu;
}  // namespace

void TorchStream::seed(uint64_t seed) {
  // mt19937's initialisation (Matsumoto and Nishimura's init_genrand) from the seed's low 32
  // bits; the first draw twists.
  seed_ = seed;
  mt_[0] = static_cast<uint32_t>(seed);
  for (int j = 1; j < kN; ++j) mt_[j] = 1812433253u * (mt_[j - 1] ^ (mt_[j - 1] >> 30)) + static_cast<uint32_t>(j);
  left_ = 1;
  next_ = 0;
  next_double_normal_.reset();
  next_float_normal_.reset();
}

void TorchStream::twist() {
  for (int k = 0; k < kN; ++k) {
    const uint32_t y = (mt_[k] & kUpper) | (mt_[(k + 1) % kN] & kLower);
    mt_[k] = mt_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
  }
  left_ = kN;
  next_ = 0;
}

uint32_t TorchStream::random() {
  if (--left_ == 0) twist();
  uint32_t y = mt_[next_++];
  y ^= y >> 11;  // tempering
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint64_t TorchStream::random64() {
  const uint64_t hi = random();
  return (hi << 32) | random();
}

double TorchStream::uniform() { return static_cast<double>(random64() & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53; }

float TorchStream::uniform_float() { return static_cast<float>(random() & ((1u << 24) - 1)) * 0x1.0p-24f; }

double TorchStream::normal() {
  if (next_double_normal_) {
    const double z = *next_double_normal_;
    next_double_normal_.reset();
    return z;
  }
  const double u1 = uniform(), u2 = uniform();  // u1 the angle, u2 the radius
  const double r = std::sqrt(-2.0 * std::log1p(-u2));
  const double theta = 2.0 * M_PI * u1;
  next_double_normal_ = r * std::sin(theta);
  return r * std::cos(theta);
}

int64_t TorchStream::random_from_to(uint64_t range, int64_t base) {
  const uint64_t word = range >= (uint64_t{1} << 28) ? random64() : random();
  return static_cast<int64_t>(word % range + static_cast<uint64_t>(base));
}

// ---- the state as torch's bytes ------------------------------------------------------------------
// CPUGeneratorImplState: the legacy THGenerator record (the seed, left, seeded, next, the 624
// words each in 8 bytes, three doubles of which the second is the kept normal, its valid flag),
// then the kept float normal and its flag; little-endian, as torch writes it on x86-64.

namespace {
constexpr size_t kSeedAt = 0, kLeftAt = 8, kSeededAt = 12, kNextAt = 16, kWordsAt = 24;
constexpr size_t kNormalYAt = kWordsAt + 8 * kN + 8, kNormalValidAt = kNormalYAt + 16;
constexpr size_t kFloatNormalAt = 5048, kFloatNormalValidAt = 5052;

template <class T>
void put(TorchStream::StateBytes& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}
template <class T>
T get(const TorchStream::StateBytes& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
}  // namespace

TorchStream::StateBytes TorchStream::state_bytes() const {
  StateBytes b{};
  put<uint64_t>(b, kSeedAt, seed_);
  put<int32_t>(b, kLeftAt, left_);
  put<int32_t>(b, kSeededAt, 1);
  put<uint64_t>(b, kNextAt, next_);
  for (int k = 0; k < kN; ++k) put<uint64_t>(b, kWordsAt + 8 * static_cast<size_t>(k), mt_[k]);
  if (next_double_normal_) {
    put<double>(b, kNormalYAt, *next_double_normal_);
    put<int32_t>(b, kNormalValidAt, 1);
  }
  if (next_float_normal_) {
    put<float>(b, kFloatNormalAt, *next_float_normal_);
    b[kFloatNormalValidAt] = 1;
  }
  return b;
}

void TorchStream::set_state_bytes(const StateBytes& b) {
  const int32_t left = get<int32_t>(b, kLeftAt), seeded = get<int32_t>(b, kSeededAt);
  const uint64_t next = get<uint64_t>(b, kNextAt);
  if (seeded == 0 || left <= 0 || left > kN || next > kN) throw std::invalid_argument("Invalid mt19937 state");
  seed_ = get<uint64_t>(b, kSeedAt);
  left_ = left;
  next_ = static_cast<uint32_t>(next);
  for (int k = 0; k < kN; ++k) mt_[k] = static_cast<uint32_t>(get<uint64_t>(b, kWordsAt + 8 * static_cast<size_t>(k)));
  next_double_normal_.reset();
  if (get<int32_t>(b, kNormalValidAt)) next_double_normal_ = get<double>(b, kNormalYAt);
  next_float_normal_.reset();
  if (b[kFloatNormalValidAt]) next_float_normal_ = get<float>(b, kFloatNormalAt);
}

// ---- uniform_ ------------------------------------------------------------------------------------

namespace {
// from + x·(to − from), in the dtype: fused in torch's AVX2 build (GCC contracts it there).
inline float affine(float x, float from, float to, bool fused) { return fused ? std::fma(x, to - from, from) : x * (to - from) + from; }
inline double affine(double x, double from, double to, bool fused) { return fused ? std::fma(x, to - from, from) : x * (to - from) + from; }
}  // namespace

void torch_uniform_fill(float* p, int64_t n, double from, double to, TorchStream& s) {
  const bool fused = torch_kernels() == TorchKernels::Avx2;
  const float lo = static_cast<float>(from), hi = static_cast<float>(to);
  for (int64_t i = 0; i < n; ++i) p[i] = affine(s.uniform_float(), lo, hi, fused);
}

void torch_uniform_fill(double* p, int64_t n, double from, double to, TorchStream& s) {
  const bool fused = torch_kernels() == TorchKernels::Avx2;
  for (int64_t i = 0; i < n; ++i) p[i] = affine(s.uniform(), from, to, fused);
}

// ---- normal_ ---------------------------------------------------------------------------------------

double torch_normal_value(double mean, double sd, TorchStream& s) {
  const double z = s.normal();
  return torch_kernels() == TorchKernels::Avx2 ? std::fma(z, sd, mean) : z * sd + mean;
}

namespace {

// The AVX2 build's float log and sincos: Julien Pommier's AVX versions of Cephes' logf and
// sincosf (ATen's avx_mathfun.h), lane by lane, with the multiply-adds GCC fuses there fused.
// log for x in (0, 1], which is all Box-Muller gives it.
inline float cephes_log(float x) {
  x = std::fmax(x, 0x1p-126f);  // no subnormals
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  float e = static_cast<float>(static_cast<int32_t>(bits >> 23) - 127) + 1.0f;
  float m = std::bit_cast<float>((bits & ~0x7f800000u) | 0x3f000000u);  // x = m·2^e, m in [0.5, 1)
  // m below √½: one binade down (e − 1, 2m − 1), else m − 1.
  const bool low = m < 0.707106781186547524f;
  const float add_back = low ? m : 0.0f;
  m = m - 1.0f;
  e = e - (low ? 1.0f : 0.0f);
  m = m + add_back;
  const float z = m * m;
  float y = 7.0376836292E-2f;
  for (float c : {-1.1514610310E-1f, 1.1676998740E-1f, -1.2420140846E-1f, 1.4249322787E-1f, -1.6668057665E-1f,
                  2.0000714765E-1f, -2.4999993993E-1f, 3.3333331174E-1f})
    y = std::fma(y, m, c);
  y = y * m;
  y = std::fma(y, z, e * -2.12194440e-4f);
  y = y - z * 0.5f;
  return std::fma(e, 0.693359375f, m + y);
}

// sin and cos of x ≥ 0 (Box-Muller's angle, below 2π): the octant j (rounded up to even), x
// reduced by j·π/4 in three parts, then a cosine and a sine polynomial each picked by j.
inline void cephes_sincos(float x, float& sin_out, float& cos_out) {
  const uint32_t sign_of_x = std::bit_cast<uint32_t>(x) & 0x80000000u;
  x = std::fabs(x);
  int32_t j = static_cast<int32_t>(x * 1.27323954473516f);  // 4/π
  j = (j + 1) & ~1;
  const float y = static_cast<float>(j);
  const uint32_t sin_sign = sign_of_x ^ (static_cast<uint32_t>(j & 4) << 29);
  const uint32_t cos_sign = static_cast<uint32_t>(~(j - 2) & 4) << 29;
  const bool sine_poly_is_sin = (j & 2) == 0;
  x = std::fma(y, -0.78515625f, x);
  x = std::fma(y, -2.4187564849853515625e-4f, x);
  x = std::fma(y, -3.77489497744594108e-8f, x);
  const float z = x * x;
  float c = 2.443315711809948E-005f;
  c = std::fma(c, z, -1.388731625493765E-003f);
  c = std::fma(c, z, 4.166664568298827E-002f);
  c = c * z;
  c = std::fma(c, z, -(z * 0.5f));
  c = c + 1.0f;
  float s = -1.9515295891E-4f;
  s = std::fma(s, z, 8.3321608736E-3f);
  s = std::fma(s, z, -1.6666654611E-1f);
  s = s * z;
  s = std::fma(s, x, x);
  // The selection as torch's masks do it: sin = (c or 0) + (s or 0), cos = the rest.
  const float sin_from_c = sine_poly_is_sin ? 0.0f : c, sin_from_s = sine_poly_is_sin ? s : 0.0f;
  const float sin_v = sin_from_c + sin_from_s, cos_v = (c - sin_from_c) + (s - sin_from_s);
  sin_out = std::bit_cast<float>(std::bit_cast<uint32_t>(sin_v) ^ sin_sign);
  cos_out = std::bit_cast<float>(std::bit_cast<uint32_t>(cos_v) ^ cos_sign);
}

// Box-Muller on one block of 16 uniforms: (j, j + 8) → radius from the first, angle from the second.
inline void box_muller_16_avx2(float* d, float mean, float sd) {
  const float two_pi = static_cast<float>(2.0 * M_PI);
  for (int j = 0; j < 8; ++j) {
    const float radius = std::sqrt(-2.0f * cephes_log(1.0f - d[j]));
    float sin_t, cos_t;
    cephes_sincos(two_pi * d[j + 8], sin_t, cos_t);
    d[j] = std::fma(radius * cos_t, sd, mean);
    d[j + 8] = std::fma(radius * sin_t, sd, mean);
  }
}

template <class T>
inline void box_muller_16_libm(T* d, T mean, T sd) {
  for (int j = 0; j < 8; ++j) {
    const T radius = std::sqrt(-2 * std::log(1 - d[j]));
    const T theta = static_cast<T>(2.0 * M_PI * static_cast<double>(d[j + 8]));
    d[j] = std::fma(radius * std::cos(theta), sd, mean);
    d[j + 8] = std::fma(radius * std::sin(theta), sd, mean);
  }
}

template <class T, class Block>
void normal_fill(T* p, int64_t n, TorchStream& s, Block block) {
  if (n < 16) throw std::logic_error("torch_normal_fill: torch fills blocks only from 16 elements");
  auto draw = [&s](T* q, int64_t k) {
    for (int64_t i = 0; i < k; ++i) {
      if constexpr (std::is_same_v<T, float>)
        q[i] = s.uniform_float();
      else
        q[i] = s.uniform();
    }
  };
  draw(p, n);
  for (int64_t i = 0; i + 16 <= n; i += 16) block(p + i);
  if (n % 16 != 0) {
    draw(p + n - 16, 16);  // the last 16 again: fresh uniforms over the tail
    block(p + n - 16);
  }
}

}  // namespace

AG_MULTIVERSION void torch_normal_fill(float* p, int64_t n, double mean, double sd, TorchStream& s) {
  const float m = static_cast<float>(mean), fsd = static_cast<float>(sd);
  if (torch_kernels() == TorchKernels::Avx2)
    normal_fill(p, n, s, [&](float* d) { box_muller_16_avx2(d, m, fsd); });
  else
    normal_fill(p, n, s, [&](float* d) { box_muller_16_libm(d, m, fsd); });
}

void torch_normal_fill(double* p, int64_t n, double mean, double sd, TorchStream& s) {
  normal_fill(p, n, s, [&](double* d) { box_muller_16_libm(d, mean, sd); });
}

}  // namespace ag
