// What --gemm auto and --gemm-bf16 auto time (train/gemm_choice.h, train/bf16_api_choice.h): a
// training step's products for train, the forward products x·Wᵀ alone at the command's rows for
// sample and eval; and where the bf16 interface matters at all. Never which one wins: that is
// the machine's.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <tuple>

#include "autograd/kernels/gemm_provider.h"
#include "models/registry.h"
#include "tests/test_util.h"
#include "train/bf16_api_choice.h"
#include "train/config/config_error.h"
#include "train/gemm_choice.h"

using namespace ag;
using namespace ag::train;
using namespace ag::tuning;
namespace fs = std::filesystem;

namespace {

models::ParamTable default_gpt() {
  models::ModelConfig c;
  c.name = "gpt", c.vocab_size = 65, c.n_layer = 2, c.n_head = 4, c.n_embd = 128, c.block_size = 64;
  return models::find_model("gpt").parameters(c);
}

std::set<std::tuple<bool, bool, int64_t, int64_t, int64_t>> as_set(const std::vector<GemmShapeNT>& shapes) {
  std::set<std::tuple<bool, bool, int64_t, int64_t, int64_t>> out;
  for (const auto& s : shapes) out.insert({s.ta, s.tb, s.M, s.N, s.K});
  return out;
}

}  // namespace

// sample decodes one position at a time: its products are x (1, in) · Wᵀ, those of the step's
// that are forward products, and none of the backward's.
TEST(GemmChoice, ACommandsForwardShapesAreTheStepsForwardProductsAtItsRows) {
  const models::ParamTable t = default_gpt();
  const auto forward = forward_gemm_shapes(t, 1);
  ASSERT_FALSE(forward.empty());
  std::set<std::tuple<bool, bool, int64_t, int64_t, int64_t>> step_forward;
  for (const auto& s : step_gemm_shapes(t, 1))
    if (!s.ta && s.tb) step_forward.insert({s.ta, s.tb, s.M, s.N, s.K});
  EXPECT_EQ(as_set(forward), step_forward);
  EXPECT_EQ(forward.size(), step_gemm_shapes(t, 1).size() / 3);
  // What auto times: those at the rows given, at most 512 of them.
  EXPECT_EQ(as_set(auto_gemm_shapes(t, 1, GemmWork::Forward)), as_set(forward));
  EXPECT_EQ(as_set(auto_gemm_shapes(t, 384, GemmWork::TrainingStep)), as_set(step_gemm_shapes(t, 384)));
  EXPECT_EQ(as_set(auto_gemm_shapes(t, 4096, GemmWork::Forward)), as_set(forward_gemm_shapes(t, 512)));
}

// --gemm auto for sample keeps its timing under a key of the forward products at one row, apart
// from a training run's at the same rows.
TEST(GemmChoice, SampleKeepsItsForwardTimingApartFromTrainings) {
  if (!kernels::gemm_provider_available(kernels::GemmProvider::OneDNN)) GTEST_SKIP() << "one provider: nothing timed";
  const fs::path d = testing_util::temp_dir("gemm_choice_forward");
  testing_util::ScopedEnv xdg("XDG_CACHE_HOME", d.c_str());
  const kernels::GemmProviderGuard restore(kernels::gemm_provider());
  auto choose = [&](GemmWork work) {
    return apply_gemm_choice(GemmChoice::Auto, GemmBf16Choice::Auto, Precision::FP32, default_gpt(), 1, work);
  };
  const GemmDecision sample = choose(GemmWork::Forward);
  EXPECT_NE(sample.how.find("measured now"), std::string::npos) << sample.how;
  const std::string kept = testing_util::read_bytes(d / "attograd" / "peak_flops.json");
  EXPECT_NE(kept.find("rows 1 |"), std::string::npos) << kept;
  EXPECT_NE(kept.find("| forward"), std::string::npos) << kept;
  // A training step's products at the same row are timed anew, not read from the forward's.
  const GemmDecision train = choose(GemmWork::TrainingStep);
  EXPECT_NE(train.how.find("measured now"), std::string::npos) << train.how;
  const GemmDecision again = choose(GemmWork::Forward);
  EXPECT_NE(again.how.find("(kept)"), std::string::npos) << again.how;
}

// The bf16 interface matters only to bf16 GEMMs that may go to oneDNN's native path; elsewhere
// it is recorded as asked (auto: the gemm API, what every run before it ran) and runs nothing.
TEST(Bf16ApiChoice, MattersOnlyToBf16GemmsOnOneDnn) {
  const auto shapes = auto_gemm_shapes(default_gpt(), 64, GemmWork::TrainingStep);
  Bf16ApiDecision d = decide_bf16_api(GemmBf16Choice::Auto, GemmChoice::Auto, Precision::FP32, shapes);
  EXPECT_FALSE(d.runs);
  EXPECT_EQ(d.api, kernels::Bf16Api::Gemm);
  EXPECT_EQ(d.how, "");
  d = decide_bf16_api(GemmBf16Choice::Matmul, GemmChoice::Auto, Precision::FP32, shapes);
  EXPECT_FALSE(d.runs);
  EXPECT_EQ(d.api, kernels::Bf16Api::Matmul);  // recorded as asked
  d = decide_bf16_api(GemmBf16Choice::Matmul, GemmChoice::OpenBLAS, Precision::BF16, shapes);
  EXPECT_FALSE(d.runs);  // OpenBLAS's bf16 path is sgemm on rounded values
  EXPECT_NO_THROW(use_bf16_api(d));
  EXPECT_EQ(kernels::bf16_api(), kernels::Bf16Api::Gemm);  // not set: nothing runs it
}

// Where the interface runs: named as asked, or timed and kept.
TEST(Bf16ApiChoice, AutoIsTimedOnceAndKept) {
  if (!kernels::bf16_api_available(kernels::Bf16Api::Matmul)) GTEST_SKIP() << "no oneDNN matmul primitive here";
  const fs::path d = testing_util::temp_dir("bf16_api_choice");
  testing_util::ScopedEnv xdg("XDG_CACHE_HOME", d.c_str());
  const auto shapes = auto_gemm_shapes(default_gpt(), 64, GemmWork::TrainingStep);
  const Bf16ApiDecision asked = decide_bf16_api(GemmBf16Choice::Matmul, GemmChoice::OneDNN, Precision::BF16, shapes);
  EXPECT_TRUE(asked.runs);
  EXPECT_EQ(asked.how, "--gemm-bf16 matmul");
  const Bf16ApiDecision first = decide_bf16_api(GemmBf16Choice::Auto, GemmChoice::Auto, Precision::BF16, shapes);
  EXPECT_TRUE(first.runs);
  EXPECT_EQ(first.how.rfind("chosen by --gemm-bf16 auto: ", 0), 0u) << first.how;
  EXPECT_NE(first.how.find("measured now"), std::string::npos) << first.how;
  const Bf16ApiDecision second = decide_bf16_api(GemmBf16Choice::Auto, GemmChoice::OneDNN, Precision::BF16, shapes);
  EXPECT_EQ(second.api, first.api);
  EXPECT_NE(second.how.find("(kept)"), std::string::npos) << second.how;
  const Bf16ApiTiming t = time_bf16_apis(shapes);
  EXPECT_GT(t.gemm_gflops, 0.0);
  EXPECT_GT(t.matmul_gflops, 0.0);
}
