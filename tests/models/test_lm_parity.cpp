// Parity of the whole TransformerLM with its PyTorch twin (tests/parity/twin.py), on fixtures
// written by tests/parity/make_lm_fixtures.py (tests/parity/fixtures/lm/):
//   tiny_model.safetensors  a small model trained by `attograd train` on tiny_corpus.txt
//   expected.safetensors    the twin's logits for a fixed (2, 16) batch of ids, and in
//                           __metadata__ its eval loss on eval_text.txt (computed in float64)
// attograd loads the checkpoint with train::load_model, as `attograd sample/eval` do, and must
// agree with the twin: logits to 1e-4 (max abs), eval loss to 1e-4. No Python needed.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/safetensors.h"
#include "data/batch.h"
#include "data/tokenizer.h"
#include "train/run_folder/checkpoint.h"

using namespace ag;

namespace {
const std::string kDir = std::string(ATTOGRAD_SOURCE_DIR) + "/tests/parity/fixtures/lm/";
constexpr double kTol = 1e-4;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_double_vector(), y = b.to_double_vector();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (!std::isfinite(x[i])) return INFINITY;
    m = std::max(m, std::fabs(x[i] - y[i]));
  }
  return m;
}

struct Fixture {
  train::LoadedModel loaded = train::load_model(kDir + "tiny_model.safetensors");
  SafeTensorsFile expected = SafeTensorsFile::load(kDir + "expected.safetensors");
};
}  // namespace

TEST(LMParity, CheckpointIsTheSmallModelOfTheCorpus) {
  Fixture f;
  const auto& cfg = f.loaded.model->model_config();
  EXPECT_EQ(cfg.n_layer, 2);
  EXPECT_EQ(cfg.n_head, 2);
  EXPECT_EQ(cfg.n_embd, 32);
  EXPECT_EQ(cfg.block_size, 16);
  const auto corpus = data::decode_utf8(read_file(kDir + "tiny_corpus.txt"), "tiny_corpus.txt");
  EXPECT_TRUE(f.loaded.tokenizer == data::CharTokenizer::from_text(corpus)) << "vocabulary is not the corpus's";
  EXPECT_EQ(cfg.vocab_size, f.loaded.tokenizer.vocab_size());
}

TEST(LMParity, LogitsMatchTheTwin) {
  Fixture f;
  const Tensor ids = f.expected.get("ids");
  const Tensor want = f.expected.get("logits");
  ASSERT_EQ(ids.dtype(), DType::Int64);
  ASSERT_EQ(ids.shape(), Shape({2, 16}));
  NoGradGuard no_grad;
  const Tensor got = f.loaded.model->forward(ids);
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.shape(), Shape({2, 16, f.loaded.model->model_config().vocab_size}));
  const double err = max_abs_diff(got, want);
  EXPECT_LE(err, kTol) << "max |attograd - twin| over the logits";
  std::printf("[ LMParity ] logits max abs err %.3e\n", err);
}

// Shorter sequences and single rows must give the twin's logits at the same positions: the
// causal mask hides the future, and rows of a batch are independent.
TEST(LMParity, PrefixesAndSingleRowsMatchTheTwin) {
  Fixture f;
  const Tensor ids = f.expected.get("ids");
  const Tensor want = f.expected.get("logits");
  NoGradGuard no_grad;
  for (int64_t T : {1, 5, 15}) {
    SCOPED_TRACE("T = " + std::to_string(T));
    const Tensor got = f.loaded.model->forward(narrow(ids, 1, 0, T).contiguous());
    EXPECT_LE(max_abs_diff(got, narrow(want, 1, 0, T).contiguous()), kTol);
  }
  for (int64_t b : {0, 1}) {
    SCOPED_TRACE("row " + std::to_string(b));
    const Tensor got = f.loaded.model->forward(narrow(ids, 0, b, 1).contiguous());
    EXPECT_LE(max_abs_diff(got, narrow(want, 0, b, 1).contiguous()), kTol);
  }
}

// `attograd eval`'s computation (cli/cmd_eval.cpp): windows of data::eval_windows, each
// window's mean loss weighted by its length.
TEST(LMParity, EvalLossMatchesTheTwin) {
  Fixture f;
  const auto it = f.expected.metadata().find("eval_loss");
  ASSERT_NE(it, f.expected.metadata().end()) << "expected.safetensors lacks __metadata__ eval_loss";
  const double want = std::stod(it->second);

  const std::string path = kDir + "eval_text.txt";
  const auto ids = f.loaded.tokenizer.encode(std::string_view(read_file(path)), path);
  const int64_t block = f.loaded.model->model_config().block_size;
  const auto windows = data::eval_windows(static_cast<int64_t>(ids.size()), block);
  ASSERT_GT(windows.size(), 2u);
  EXPECT_LT(windows.back().second, block) << "the fixture should end with a short window";

  NoGradGuard no_grad;
  double total = 0;
  int64_t count = 0;
  for (const auto& [start, len] : windows) {
    std::vector<int64_t> x(ids.begin() + start, ids.begin() + start + len);
    std::vector<int64_t> y(ids.begin() + start + 1, ids.begin() + start + len + 1);
    const Tensor loss = f.loaded.model->loss(Tensor::from_vector(x, {1, len}), Tensor::from_vector(y, {1, len}));
    total += loss.item() * static_cast<double>(len);
    count += len;
  }
  EXPECT_EQ(count, static_cast<int64_t>(ids.size()) - 1);
  if (auto p = f.expected.metadata().find("predicted"); p != f.expected.metadata().end()) {
    EXPECT_EQ(std::to_string(count), p->second);
  }
  const double got = total / static_cast<double>(count);
  EXPECT_NEAR(got, want, kTol);
  std::printf("[ LMParity ] eval loss attograd %.9f, twin %.9f, diff %.3e\n", got, want, got - want);
}
