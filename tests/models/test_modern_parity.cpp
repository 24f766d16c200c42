// The modern transformer's parts against PyTorch in float64, from the fixtures
// tests/parity/make_modern_fixtures.py wrote (tests/parity/fixtures/modern/; no torch needed):
// rms_norm against F.rms_norm, rope against the twin's rotary embeddings, softcap, and the whole
// `--model modern` against its twin (bench/torch_speedrun.py): logits, loss and every gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/safetensors.h"
#include "models/transformer_lm.h"

using namespace ag;

namespace {
namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(ATTOGRAD_SOURCE_DIR) / "tests/parity/fixtures/modern";

void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto a = got.to_double_vector(), b = want.to_double_vector();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol * (1 + std::fabs(b[i]))) << what << " at " << i;
}
}  // namespace

TEST(ModernParity, OpsMatchTorchInFloat64) {
  const SafeTensorsFile f = SafeTensorsFile::load((kFixtures / "ops.safetensors").string());
  const Tensor g = f.get("g"), x0 = f.get("x");
  auto check = [&](const std::string& name, const std::function<Tensor(const Tensor&, const Tensor&)>& op, bool with_w) {
    Tensor x = x0.detach().clone().requires_grad_(), w = f.get("w").requires_grad_();
    const Tensor y = op(x, w);
    expect_near(y, f.get(name), 1e-13, name);
    std::vector<Tensor> wrt = {x};
    if (with_w) wrt.push_back(w);
    const auto d = grad({y}, wrt, {g});
    expect_near(d[0], f.get(name + ".dx"), 1e-12, name + ".dx");
    if (with_w) expect_near(d[1], f.get(name + ".dw"), 1e-12, name + ".dw");
  };
  check("rms_w", [](const Tensor& x, const Tensor& w) { return rms_norm(x, w, 1e-5); }, true);
  check("rms", [](const Tensor& x, const Tensor&) { return rms_norm(x); }, false);
  check("rope3", [](const Tensor& x, const Tensor&) { return rope(x, 3); }, false);
  check("softcap2", [](const Tensor& x, const Tensor&) { return softcap(x, 2.0); }, false);
}

namespace {

// A model of configuration c with the twin's weights from fixture f: the same parameter names
// (the count is checked), and the logits, the loss and every gradient as the twin's.
void expect_model_matches_twin(const models::GPTConfig& c, const SafeTensorsFile& f) {
  Generator gen(0);
  models::TransformerLM m(c, DType::Float64, gen);
  std::map<std::string, Tensor> state;
  for (const auto& [name, p] : m.named_parameters()) state[name] = f.get("param." + name);
  size_t in_file = 0;
  for (const auto& n : f.names()) in_file += n.rfind("param.", 0) == 0;
  ASSERT_EQ(state.size(), in_file) << "the twin and the model name different parameters";
  m.load_state_dict(state);
  const Tensor idx = f.get("idx"), targets = f.get("targets");
  expect_near(m.forward(idx), f.get("logits"), 1e-12, "logits");
  const Tensor loss = m.loss(idx, targets);
  EXPECT_NEAR(loss.item(), f.get("loss").item(), 1e-13);
  loss.backward();
  for (const auto& [name, p] : m.named_parameters()) expect_near(p.grad(), f.get("grad." + name), 1e-11, "grad " + name);
}

}  // namespace

TEST(ModernParity, ModelMatchesItsTwin) {
  expect_model_matches_twin(models::GPTConfig{23, 2, 2, 16, 8, 0.0, models::Architecture::modern(3.0)},
                            SafeTensorsFile::load((kFixtures / "model.safetensors").string()));
}

// modded-nanogpt's parts on (--value-embeds, --unet-skips, --x0-residual) against the twin's: 4
// layers with one value table (layers 0 and 3), 5 with two (layers 0, 1 and 3, 4, the middle
// block without), U-net skips in both, the x0 residual in the second. Every parameter, the
// twin's value_embeds.*, value_lambdas, skip_weights and x0 lambdas too, is named alike on
// both sides (the count is checked), and every gradient agrees.
TEST(ModernParity, ValueEmbeddingsAndUnetSkipsMatchTheTwin) {
  for (const char* file : {"parts4.safetensors", "parts5.safetensors"}) {
    SCOPED_TRACE(file);
    const SafeTensorsFile f = SafeTensorsFile::load((kFixtures / file).string());
    models::GPTConfig c{23, 0, 2, 16, 8, 0.0, models::Architecture::modern(3.0)};
    c.value_embeds = static_cast<int64_t>(f.get("value_embeds").item());
    c.unet_skips = f.get("unet_skips").item() != 0;
    c.x0_residual = f.get("x0_residual").item() != 0;
    int64_t blocks = 0;
    for (const auto& n : f.names())
      if (n.rfind("param.blocks.", 0) == 0) blocks = std::max<int64_t>(blocks, std::stoll(n.substr(13)) + 1);
    c.n_layer = blocks;
    ASSERT_TRUE(c.value_embeds > 0 && c.unet_skips);
    expect_model_matches_twin(c, f);
  }
}
