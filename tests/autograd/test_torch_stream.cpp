// torch's CPU generator, bit for bit: every case of tests/parity/fixtures/generator/ (drawn by
// tests/parity/make_generator_fixtures.py with torch 2, each from its own seed) drawn again from a
// torch Generator (autograd/random.h) and compared exactly: the same bits, not close values.
// The cases run with torch's AVX2 kernels forced (the fixtures were made on an AVX-512 CPU, which
// runs them), those named "default." with its default build's, so that the test gives the same
// answer on any CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "autograd/ops.h"
#include "autograd/random_ops.h"
#include "autograd/safetensors.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/init.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"

namespace ag {
namespace {

const SafeTensorsFile& fixtures() {
  static const SafeTensorsFile f =
      SafeTensorsFile::load(std::string(ATTOGRAD_SOURCE_DIR) + "/tests/parity/fixtures/generator/draws.safetensors");
  return f;
}

class Kernels {  // torch's kernels forced while it lives
 public:
  explicit Kernels(TorchKernels k) { set_torch_kernels_for_testing(k); }
  ~Kernels() { set_torch_kernels_for_testing(std::nullopt); }
};

Generator torch_gen(uint64_t seed) { return Generator::torch(seed); }

// A tensor's values as bit patterns (floats' bits, integers' and bools' values), for an exact
// comparison that also tells float32 from float64.
std::vector<uint64_t> bits_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<uint64_t> out(static_cast<size_t>(c.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (c.dtype()) {
      case DType::Float32: out[i] = std::bit_cast<uint32_t>(c.data<float>()[i]); break;
      case DType::Float64: out[i] = std::bit_cast<uint64_t>(c.data<double>()[i]); break;
      case DType::Int64: out[i] = static_cast<uint64_t>(c.data<int64_t>()[i]); break;
      case DType::Bool: out[i] = c.data<bool>()[i] ? 1 : 0; break;
    }
  }
  return out;
}

// The fixture is stored with bools as int64.
DType stored_dtype(DType d) { return d == DType::Bool ? DType::Int64 : d; }

void expect_torchs(const std::string& name, const Tensor& got) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(fixtures().has(name)) << "no fixture";
  const Tensor want = fixtures().get(name);
  ASSERT_EQ(want.shape(), got.shape());
  ASSERT_EQ(want.dtype(), stored_dtype(got.dtype()));
  const std::vector<uint64_t> w = bits_of(want), g = bits_of(got);
  size_t differ = 0, first = w.size();
  for (size_t i = 0; i < w.size(); ++i)
    if (w[i] != g[i] && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << "of " << w.size() << " values; the first at " << first;
}

std::vector<unsigned char> state_bytes(const Generator& g) {
  const Generator::State s = g.state();
  std::vector<unsigned char> b(s.size() * 8);
  std::memcpy(b.data(), s.data(), b.size());
  return b;
}

std::vector<unsigned char> fixture_bytes(const std::string& name) {
  const auto span = fixtures().bytes(name);
  return {span.begin(), span.end()};
}

Tensor empty(int64_t n, DType d = DType::Float32) { return Tensor::empty({n}, d); }

Tensor probs(int64_t rows, int64_t cols, DType d = DType::Float32) {  // the maker's probs()
  std::vector<double> w;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) w.push_back(static_cast<double>((i * 7 + j * 3) % 5));
  return Tensor::from_vector(w, {rows, cols}, d);
}

using Cases = std::map<std::string, std::function<Tensor()>>;

// The draws whose arithmetic depends on torch's build of its kernels (the maker's kernel_cases).
Cases kernel_cases() {
  Cases c;
  c["rand_f32"] = [] { auto g = torch_gen(1); return Tensor::rand({1000}, DType::Float32, g); };
  c["uniform_f32"] = [] { auto g = torch_gen(1); Tensor t = empty(1000); return uniform_(t, -1.0 / 3, 2.0 / 7, g); };
  c["uniform_f64"] = [] { auto g = torch_gen(1); Tensor t = empty(1000, DType::Float64); return uniform_(t, -1.0 / 3, 2.0 / 7, g); };
  for (int64_t n : {5, 17, 1000}) {
    c["randn_f32_" + std::to_string(n)] = [n] { auto g = torch_gen(2); return Tensor::randn({n}, DType::Float32, g); };
    c["randn_f64_" + std::to_string(n)] = [n] { auto g = torch_gen(2); return Tensor::randn({n}, DType::Float64, g); };
  }
  for (auto [suffix, n] : {std::pair{"", 1000}, std::pair{"_small", 7}})
    for (DType d : {DType::Float32, DType::Float64}) {
      const std::string name = std::string(d == DType::Float32 ? "normal_f32" : "normal_f64") + "_mean_std" + suffix;
      c[name] = [n, d] { auto g = torch_gen(3); Tensor t = empty(n, d); return normal_(t, 0.3, 1.7, g); };
    }
  return c;
}

Cases cases() {
  Cases c = kernel_cases();
  for (int64_t n : {1, 100})
    c["rand_f32_" + std::to_string(n)] = [n] { auto g = torch_gen(1); return Tensor::rand({n}, DType::Float32, g); };
  c["rand_f64"] = [] { auto g = torch_gen(1); return Tensor::rand({1000}, DType::Float64, g); };
  c["uniform_f32_wide"] = [] { auto g = torch_gen(1); Tensor t = empty(500); return uniform_(t, -1e3, 5e2, g); };
  for (int64_t n : {1, 15, 16, 31, 33}) {
    c["randn_f32_" + std::to_string(n)] = [n] { auto g = torch_gen(2); return Tensor::randn({n}, DType::Float32, g); };
    c["randn_f64_" + std::to_string(n)] = [n] { auto g = torch_gen(2); return Tensor::randn({n}, DType::Float64, g); };
  }
  c["randn_sequence"] = [] {
    auto g = torch_gen(5);
    std::vector<Tensor> parts;
    for (int64_t n : {3, 3, 20, 1}) parts.push_back(Tensor::randn({n}, DType::Float32, g));
    return concat(parts, 0);
  };
  c["normal_transposed"] = [] {
    auto g = torch_gen(4);
    Tensor t = transpose(Tensor::empty({3, 7}), 0, 1);
    return normal_(t, 0.0, 1.0, g).contiguous();
  };
  c["uniform_transposed"] = [] {
    auto g = torch_gen(4);
    Tensor t = transpose(Tensor::empty({3, 7}), 0, 1);
    return uniform_(t, -2.0, 3.0, g).contiguous();
  };
  const int64_t lowest = std::numeric_limits<int64_t>::min(), highest = std::numeric_limits<int64_t>::max();
  const std::map<std::string, std::pair<int64_t, int64_t>> ranges = {
      {"0_10", {0, 10}}, {"m5_5", {-5, 5}}, {"below_2p28", {0, (int64_t{1} << 28) - 1}}, {"2p28", {0, int64_t{1} << 28}},
      {"m2p40_2p40", {-(int64_t{1} << 40), int64_t{1} << 40}}, {"int64", {lowest, highest}}};
  for (const auto& [name, r] : ranges)
    c["randint_" + name] = [r] { auto g = torch_gen(6); return Tensor::randint(r.first, r.second, {100}, g); };
  c["random_f32_0_1000"] = [] { auto g = torch_gen(6); Tensor t = empty(100); return random_(t, 0, 1000, g); };
  c["random_f64_m7_7"] = [] { auto g = torch_gen(6); Tensor t = empty(100, DType::Float64); return random_(t, -7, 7, g); };
  for (auto [name, d] : {std::pair{"f32", DType::Float32}, std::pair{"f64", DType::Float64}, std::pair{"i64", DType::Int64},
                         std::pair{"bool", DType::Bool}}) {
    c[std::string("random_default_") + name] = [d] { auto g = torch_gen(7); Tensor t = empty(50, d); return random_(t, g); };
    c[std::string("bernoulli_scalar_") + name] = [d] { auto g = torch_gen(8); Tensor t = empty(500, d); return bernoulli_(t, 0.3, g); };
  }
  c["random_from_i64"] = [] { auto g = torch_gen(7); Tensor t = empty(50, DType::Int64); return random_(t, 5, std::nullopt, g); };
  c["random_full_i64"] = [lowest] { auto g = torch_gen(7); Tensor t = empty(50, DType::Int64); return random_(t, lowest, std::nullopt, g); };
  for (int64_t n : {1, 2, 10, 1000})
    c["randperm_" + std::to_string(n)] = [n] { auto g = torch_gen(9); return randperm(n, g); };
  c["randperm_f64"] = [] { auto g = torch_gen(9); return randperm(100, g, DType::Float64); };

  c["bernoulli_p"] = [] { return fixtures().get("bernoulli_p"); };  // the input itself
  c["bernoulli_tensor_f32"] = [] { auto g = torch_gen(10); return bernoulli(fixtures().get("bernoulli_p"), g); };
  c["bernoulli_tensor_f64"] = [] { auto g = torch_gen(10); return bernoulli(fixtures().get("bernoulli_p").to(DType::Float64), g); };
  c["bernoulli_f64_of_f32_p"] = [] {
    auto g = torch_gen(10);
    Tensor t = empty(500, DType::Float64);
    return bernoulli_(t, fixtures().get("bernoulli_p"), g);
  };
  c["bernoulli_broadcast_p"] = [] {
    auto g = torch_gen(10);
    Tensor t = Tensor::empty({4, 5});
    return bernoulli_(t, Tensor::from_vector(std::vector<double>{0, 0.25, 0.5, 0.75, 1}, {5}), g);
  };
  c["exponential_f32"] = [] { auto g = torch_gen(11); Tensor t = empty(500); return exponential_(t, 2.5, g); };
  c["exponential_f64"] = [] { auto g = torch_gen(11); Tensor t = empty(500, DType::Float64); return exponential_(t, 2.5, g); };

  c["multinomial_replacement"] = [] { auto g = torch_gen(12); return multinomial(probs(3, 7), 20, true, g); };
  c["multinomial_replacement_f64"] = [] { auto g = torch_gen(12); return multinomial(probs(3, 7, DType::Float64), 20, true, g); };
  c["multinomial_replacement_1d"] = [] { auto g = torch_gen(12); return multinomial(reshape(probs(1, 9), {9}), 30, true, g); };
  c["multinomial_no_replacement"] = [] { auto g = torch_gen(12); return multinomial(probs(3, 50), 10, false, g); };
  c["multinomial_one"] = [] { auto g = torch_gen(12); return multinomial(probs(3, 50), 1, true, g); };
  c["multinomial_all"] = [] { auto g = torch_gen(12); return multinomial(probs(2, 6) + 1.0, 6, false, g); };

  // The default generator's cases of the maker (torch.manual_seed(s), then modules and F.dropout).
  c["dropout_input"] = [] { auto g = torch_gen(13); return Tensor::randn({1000}, DType::Float32, g); };
  c["dropout_03"] = [] {
    auto g = torch_gen(13);
    return dropout(Tensor::randn({1000}, DType::Float32, g), 0.3, true, g);
  };
  c["dropout_then"] = [] {
    auto g = torch_gen(13);
    dropout(Tensor::randn({1000}, DType::Float32, g), 0.3, true, g);
    return Tensor::rand({3}, DType::Float32, g);
  };
  c["dropout_1"] = [] {
    auto g = torch_gen(13);
    const Tensor d = dropout(Tensor::ones({5}), 1.0, true, g);
    return concat({d, Tensor::rand({3}, DType::Float32, g)}, 0);
  };
  c["linear_weight"] = [] { auto g = torch_gen(14); return nn::Linear(20, 30, true, DType::Float32, g).weight; };
  c["linear_bias"] = [] { auto g = torch_gen(14); return nn::Linear(20, 30, true, DType::Float32, g).bias; };
  auto linear_f64 = [](bool weight) {
    auto g = torch_gen(14);
    nn::Linear(20, 30, true, DType::Float32, g);
    const nn::Linear l(7, 3, true, DType::Float64, g);
    return weight ? l.weight : l.bias;
  };
  c["linear_f64_weight"] = [linear_f64] { return linear_f64(true); };
  c["linear_f64_bias"] = [linear_f64] { return linear_f64(false); };
  c["embedding_weight"] = [] { auto g = torch_gen(15); return nn::Embedding(10, 7, DType::Float32, g).weight; };
  c["embedding_small_weight"] = [] {
    auto g = torch_gen(15);
    nn::Embedding(10, 7, DType::Float32, g);
    return nn::Embedding(3, 4, DType::Float32, g).weight;
  };
  c["after_layer_norm"] = [] {
    auto g = torch_gen(15);
    nn::Embedding(10, 7, DType::Float32, g);
    nn::Embedding(3, 4, DType::Float32, g);
    nn::LayerNorm(6);  // draws nothing (and would not draw from g)
    return Tensor::rand({3}, DType::Float32, g);
  };
  auto mha = [](int part) {
    auto g = torch_gen(16);
    const nn::MultiheadAttention a(8, 2, 0.0, true, false, DType::Float32, g);
    return part == 0 ? a.in_proj_weight : part == 1 ? a.out_proj->weight : Tensor::rand({3}, DType::Float32, g);
  };
  c["mha_in_proj_weight"] = [mha] { return mha(0); };
  c["mha_out_proj_weight"] = [mha] { return mha(1); };
  c["mha_then"] = [mha] { return mha(2); };
  c["xavier_uniform"] = [] {
    auto g = torch_gen(17);
    Tensor w = Tensor::empty({6, 9});
    nn::init::xavier_uniform_(w, 1.3, g);
    return w;
  };
  c["kaiming_uniform_linear"] = [] {
    auto g = torch_gen(17);
    Tensor w = Tensor::empty({6, 9});
    nn::init::xavier_uniform_(w, 1.3, g);
    nn::init::kaiming_uniform_linear_(w, g);
    return w;
  };
  return c;
}

const char* kStates[] = {"state_seed_42", "state_after_draws", "state_seed_big"};

TEST(TorchStream, EveryFixtureHasItsCase) {
  const Cases all = cases(), kernels = kernel_cases();
  std::set<std::string> replayed;
  for (const auto& [name, f] : all) replayed.insert(name);
  for (const auto& [name, f] : kernels) replayed.insert("default." + name);
  for (const char* s : kStates) replayed.insert(s);
  for (const std::string& name : fixtures().names()) EXPECT_TRUE(replayed.count(name)) << name << " is not replayed";
  for (const std::string& name : replayed) EXPECT_TRUE(fixtures().has(name)) << name << " has no fixture";
}

TEST(TorchStream, DrawsWhatTorchDraws) {
  const Kernels avx2(TorchKernels::Avx2);
  for (const auto& [name, draw] : cases()) expect_torchs(name, draw());
}

TEST(TorchStream, DrawsWhatTorchsDefaultKernelsDraw) {
  const Kernels plain(TorchKernels::Default);
  for (const auto& [name, draw] : kernel_cases()) expect_torchs("default." + name, draw());
}

// The state is torch.get_rng_state()'s bytes, and torch's bytes continue the stream here.
TEST(TorchStream, StateIsTorchsBytes) {
  Generator g = Generator::torch(42);
  EXPECT_EQ(state_bytes(g), fixture_bytes("state_seed_42"));
  Tensor::randn({3}, DType::Float32, g);
  Tensor::rand({700}, DType::Float32, g);
  EXPECT_EQ(state_bytes(g), fixture_bytes("state_after_draws"));
  EXPECT_EQ(state_bytes(Generator::torch((uint64_t{1} << 40) + 5)), fixture_bytes("state_seed_big"));
  EXPECT_EQ(Generator::torch((uint64_t{1} << 40) + 5).initial_seed(), (uint64_t{1} << 40) + 5);

  Generator restored;  // an attograd generator becomes torch's from torch's bytes
  const std::vector<unsigned char> b = fixture_bytes("state_after_draws");
  Generator::State words(b.size() / 8);
  std::memcpy(words.data(), b.data(), b.size());
  restored.set_state(words);
  EXPECT_EQ(restored.kind(), GeneratorKind::Torch);
  EXPECT_EQ(restored.initial_seed(), 42u);
  EXPECT_EQ(restored.normal(), g.normal());  // the kept half of the pair
  EXPECT_EQ(restored.next_u64(), g.next_u64());
  words[1] = 0;  // left = 0: not a state torch would write
  EXPECT_THROW(restored.set_state(words), std::invalid_argument);
  EXPECT_THROW(restored.set_state(Generator::State(7)), std::invalid_argument);
  EXPECT_EQ(restored.next_u64(), g.next_u64());  // a refused state changes nothing
}

// torch's refusals, with its messages (nothing drawn when refused).
TEST(TorchStream, RefusesWhatTorchRefuses) {
  Generator g = Generator::torch(0);
  const Generator before = g;
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(nothing thrown)");
  };
  Tensor f = empty(3), i = empty(3, DType::Int64), b = empty(3, DType::Bool);
  EXPECT_EQ(message([&] { uniform_(f, 1, 0, g); }), "uniform_ expects to return a [from, to) range, but found from=1 > to=0");
  EXPECT_EQ(message([&] { uniform_(i, 0, 1, g); }), "\"check_uniform_bounds\" not implemented for 'Long'");
  EXPECT_EQ(message([&] { normal_(f, 0, -1, g); }), "normal expects std >= 0.0, but found std -1");
  EXPECT_EQ(message([&] { exponential_(f, 0, g); }), "exponential_ expects lambda > 0.0, but found lambda=0");
  EXPECT_EQ(message([&] { bernoulli_(f, 1.5, g); }), "bernoulli_ expects p to be in [0, 1], but got p=1.5");
  EXPECT_EQ(message([&] { random_(f, 5, 5, g); }), "random_ expects 'from' to be less than 'to', but got from=5 >= to=5");
  EXPECT_EQ(message([&] { random_(b, 0, 3, g); }), "to - 1 is out of bounds for bool");
  EXPECT_EQ(message([&] { randperm(-1, g); }), "Trying to create tensor with negative dimension -1: [-1]");
  EXPECT_EQ(message([&] { multinomial(Tensor::ones({1, 1, 1}), 1, false, g); }), "prob_dist must be 1 or 2 dim");
  EXPECT_EQ(message([&] { multinomial(Tensor::ones({2}), 3, false, g); }),
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  EXPECT_EQ(message([&] { multinomial(Tensor::from_vector(std::vector<double>{1, -2}, {2}), 1, false, g); }),
            "probability tensor contains either `inf`, `nan` or element < 0");
  EXPECT_EQ(message([&] { multinomial(Tensor::zeros({2}), 2, true, g); }),
            "invalid multinomial distribution (sum of probabilities <= 0)");
  EXPECT_EQ(message([&] { multinomial(Tensor::from_vector(std::vector<double>{1, NAN}, {2}), 2, true, g); }),
            "invalid multinomial distribution (encountering probability entry < 0)");
  EXPECT_EQ(message([&] { multinomial(Tensor::from_vector(std::vector<double>{1, INFINITY}, {2}), 2, true, g); }),
            "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
  Tensor leaf = Tensor::zeros({3});
  leaf.requires_grad_(true);
  EXPECT_EQ(message([&] { normal_(leaf, 0, 1, g); }), "a leaf Variable that requires grad is being used in an in-place operation.");
  EXPECT_EQ(g.state(), before.state());
}

// An in-place draw on a tensor in a graph is recorded: the old values get a zero gradient.
TEST(TorchStream, ADrawIntoAGraphIsRecorded) {
  Generator g = Generator::torch(1);
  Tensor x = Tensor::ones({4});
  x.requires_grad_(true);
  Tensor y = mul(x, 2.0);
  normal_(y, 0, 1, g);
  sum(mul(y, x)).backward();
  auto g2 = Generator::torch(1);
  const Tensor z = Tensor::randn({4}, DType::Float32, g2);
  EXPECT_EQ(x.grad().to_double_vector(), z.to_double_vector());  // d(y·x)/dx = y, nothing through y
}

// The same draws from an attograd generator: attograd's stream, the same algorithms and checks.
TEST(RandomOps, AnAttogradGeneratorDrawsValidSamples) {
  Generator g(3);
  const Tensor perm = randperm(50, g);
  std::vector<int64_t> sorted(perm.data<int64_t>(), perm.data<int64_t>() + 50);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
  const Tensor w = Tensor::from_vector(std::vector<double>{0, 1, 0, 3, 0, 2}, {6});
  const Tensor no_repl = multinomial(w, 3, false, g);  // the three nonzero categories, each once
  std::vector<int64_t> picked(no_repl.data<int64_t>(), no_repl.data<int64_t>() + 3);
  std::sort(picked.begin(), picked.end());
  EXPECT_EQ(picked, (std::vector<int64_t>{1, 3, 5}));
  const Tensor repl = multinomial(w, 600, true, g);
  std::map<int64_t, int> count;
  for (int64_t i = 0; i < 600; ++i) ++count[repl.data<int64_t>()[i]];
  EXPECT_EQ(count.size(), 3u);  // never a zero weight
  EXPECT_NEAR(count[3] / 600.0, 0.5, 0.08);
  Tensor b = Tensor::empty({2000});
  bernoulli_(b, 0.25, g);
  EXPECT_NEAR(mean(b).item(), 0.25, 0.04);
  Tensor e = Tensor::empty({4000}, DType::Float64);
  exponential_(e, 2.0, g);
  EXPECT_NEAR(mean(e).item(), 0.5, 0.05);
  Tensor r = Tensor::empty({1000}, DType::Int64);
  random_(r, -3, 4, g);
  const auto [lo, hi] = std::minmax_element(r.data<int64_t>(), r.data<int64_t>() + 1000);
  EXPECT_EQ(*lo, -3);
  EXPECT_EQ(*hi, 3);
}

}  // namespace
}  // namespace ag
