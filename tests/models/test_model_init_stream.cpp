// A model's parameters come out of the seed as they always have: the values each registered
// model draws, and where it leaves the generator, are pinned to those of the two-list design
// (modules drawing torch's default init, then a parameter table drawing the model's), so that
// describing the model once changed no result (`make train`'s loss, the parity fixtures).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>

#include "models/registry.h"

namespace ag {
namespace {

// FNV-1a over the bits of every parameter's values, in named_parameters() order.
uint64_t fingerprint(const nn::Module& m) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& [name, p] : m.named_parameters())
    for (double v : p.to_double_vector()) {
      h ^= std::bit_cast<uint64_t>(v);
      h *= 1099511628211ull;
    }
  return h;
}

struct Case {
  const char* model;
  int64_t vocab, layers, heads, embd, block;
  uint64_t params;         // fingerprint() of the model built from Generator(1337)
  Generator::State after;  // the generator after building it
};

TEST(ModelInitStream, EveryModelDrawsWhatItAlwaysDrew) {
  // The GPT's 13·9 + 4·9 normal draws are odd in number: the stream after its modules' share
  // holds a Box-Muller spare, which its tok_emb's first value is.
  const Case cases[] = {
      {"gpt", 13, 2, 3, 9, 4, 15435908124368867657ull,
       {3733899620132235754ull, 6778275147707583588ull, 3791232938338887856ull, 1464890746211421742ull, 0, 13822804559312601578ull}},
      {"modern", 13, 2, 2, 12, 5, 17520352937208746531ull,
       {9182438341918973103ull, 11063002516452688334ull, 4890455271736113377ull, 6521203706670264684ull, 0, 13821973943315098627ull}},
      {"mlp", 13, 0, 0, 6, 3, 17744411599182410905ull,
       {8882559602215094678ull, 2588543610611601460ull, 12019687445756879084ull, 16626335167246348261ull, 0, 4608679370547621090ull}},
  };
  for (const Case& k : cases) {
    models::ModelConfig c;
    c.name = k.model;
    c.vocab_size = k.vocab, c.block_size = k.block, c.n_embd = k.embd, c.hidden = 7;
    if (k.layers) c.n_layer = k.layers, c.n_head = k.heads;
    Generator gen(1337);
    const auto model = models::make_model(c, DType::Float32, gen);
    const Generator::State s = gen.state();
    EXPECT_EQ(fingerprint(*model), k.params) << k.model;
    EXPECT_EQ(s, k.after) << k.model;
  }
}

}  // namespace
}  // namespace ag
