#include "autograd/random.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace ag {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr size_t kAttogradWords = 6, kTorchWords = TorchStream::kStateBytes / 8;
static_assert(TorchStream::kStateBytes % 8 == 0);
}  // namespace

const char* generator_kind_name(GeneratorKind k) { return k == GeneratorKind::Torch ? "torch" : "attograd"; }

void Generator::manual_seed(uint64_t seed) {
  seed_ = seed;
  if (kind_ == GeneratorKind::Torch) return torch_.seed(seed);
  uint64_t x = seed;
  for (auto& w : s_) w = splitmix64(x);
  has_spare_ = false;
  spare_ = 0.0;
}

uint64_t Generator::next_u64() {
  if (kind_ == GeneratorKind::Torch) return torch_.random64();
  const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = std::rotl(s_[3], 45);
  return result;
}

uint32_t Generator::next_u32() {
  return kind_ == GeneratorKind::Torch ? torch_.random() : static_cast<uint32_t>(next_u64() >> 32);
}

double Generator::uniform() {
  if (kind_ == GeneratorKind::Torch) return torch_.uniform();
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

float Generator::uniform_float() {
  if (kind_ == GeneratorKind::Torch) return torch_.uniform_float();
  return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f;
}

double Generator::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

double Generator::normal() {
  if (kind_ == GeneratorKind::Torch) return torch_.normal();
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // Box-Muller on (0, 1] x [0, 1): u1 is never 0, so log(u1) is finite.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * M_PI * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return r * std::cos(theta);
}

int64_t Generator::randint(int64_t lo, int64_t hi) {
  if (hi <= lo) throw std::invalid_argument("Generator::randint: empty range [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  return random_from_to(static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo), lo);  // unsigned: hi - lo overflows int64 for ranges wider than 2^63
}

int64_t Generator::random_from_to(uint64_t range, int64_t base) {
  if (kind_ == GeneratorKind::Torch) return range == 0 ? static_cast<int64_t>(torch_.random64()) : torch_.random_from_to(range, base);
  if (range == 0) return static_cast<int64_t>(next_u64());
  // Rejection sampling: draw from the largest multiple of range below 2^64.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % range);
  uint64_t x;
  do x = next_u64(); while (x >= limit);
  return static_cast<int64_t>(static_cast<uint64_t>(base) + x % range);
}

TorchStream& Generator::torch_stream() {
  if (kind_ != GeneratorKind::Torch) throw std::logic_error("Generator::torch_stream: an attograd generator has no torch stream");
  return torch_;
}

Generator::State Generator::state() const {
  if (kind_ == GeneratorKind::Attograd)
    return {s_[0], s_[1], s_[2], s_[3], has_spare_ ? 1ull : 0ull, std::bit_cast<uint64_t>(spare_)};
  const TorchStream::StateBytes bytes = torch_.state_bytes();
  State s(kTorchWords);
  std::memcpy(s.data(), bytes.data(), bytes.size());
  return s;
}

void Generator::set_state(const State& s) {
  if (s.size() == kAttogradWords) {
    if ((s[0] | s[1] | s[2] | s[3]) == 0) throw std::invalid_argument("Generator::set_state: all-zero xoshiro state is invalid");
    kind_ = GeneratorKind::Attograd;
    for (int i = 0; i < 4; ++i) s_[i] = s[i];
    has_spare_ = s[4] != 0;
    spare_ = std::bit_cast<double>(s[5]);
    return;
  }
  if (s.size() != kTorchWords)
    throw std::invalid_argument("Generator::set_state: a state has " + std::to_string(kAttogradWords) + " words (attograd) or " +
                                std::to_string(kTorchWords) + " (torch), got " + std::to_string(s.size()));
  TorchStream::StateBytes bytes;
  std::memcpy(bytes.data(), s.data(), bytes.size());
  torch_.set_state_bytes(bytes);  // checks before it changes anything
  kind_ = GeneratorKind::Torch;
  seed_ = torch_.initial_seed();
}

Generator& default_generator() {
  static Generator gen(1337);
  return gen;
}

}  // namespace ag
