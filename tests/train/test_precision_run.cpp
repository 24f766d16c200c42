// --precision bf16 and --gemm in training runs: a bf16 run resumes bit for bit and keeps
// float32 checkpoints; --gemm auto chooses, records its choice and keeps it on resume; a resume
// with another precision or provider is refused with the recorded value.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograd/kernels/gemm_provider.h"
#include "autograd/safetensors.h"
#include "tests/train/small_run.h"
#include "tests/test_util.h"
#include "train/config/config_error.h"
#include "train/run_folder/train_state.h"
#include "train/trainer.h"

using namespace ag;
using namespace ag::train;
namespace fs = std::filesystem;
using namespace ag::testing_util;

namespace {

double last_val_loss(const fs::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  double v = 0;
  for (std::string l; std::getline(in, l);) {
    const auto j = nlohmann::json::parse(l);
    if (j.contains("val_loss") && j["val_loss"].is_number()) v = j["val_loss"].get<double>();
  }
  return v;
}

TrainConfig bf16_run(const fs::path& d, const std::string& name, GemmChoice gemm) {
  TrainConfig c = small_run(d, name);
  c.precision = Precision::BF16;
  c.gemm = gemm;
  c.iters = 120;
  c.eval_every = 40;
  return c;
}

std::string refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The choice is kept under a key of the machine and both providers' kernels, not of the provider
// in use: a process that had set oneDNN before (a Python session) reads the entry the command
// kept, and so makes the command's choice. (Keyed by the provider in use, it measured again and
// could choose the other where the two are close.)
TEST(PrecisionRun, AutoReadsOneKeptChoiceWhicheverProviderIsInUse) {
  if (!kernels::gemm_provider_available(kernels::GemmProvider::OneDNN)) GTEST_SKIP() << "built without oneDNN";
  const fs::path d = temp_dir("gemm_auto_in_use");
  ScopedEnv xdg("XDG_CACHE_HOME", d.c_str());
  std::string lines[2];
  for (int i = 0; i < 2; ++i) {
    const kernels::GemmProviderGuard in_use(i == 0 ? kernels::GemmProvider::OpenBLAS : kernels::GemmProvider::OneDNN);
    TrainConfig c = small_run(d, "run" + std::to_string(i));
    c.iters = 2;
    std::ostringstream log;
    train_lm(c, log);
    std::istringstream in(log.str());
    for (std::string l; std::getline(in, l);)
      if (l.rfind("gemm: ", 0) == 0) lines[i] = l;
  }
  const std::string kept_in = ", kept in " + (d / "attograd" / "peak_flops.json").string() + ")";
  const size_t measured = lines[0].find("(measured now" + kept_in);
  ASSERT_NE(measured, std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], lines[0].substr(0, measured) + "(kept)");
}

TEST(PrecisionRun, Bf16RunsResumeBitIdenticalAndCheckpointFloat32) {
  const fs::path d = temp_dir("bf16_resume");
  ScopedEnv xdg("XDG_CACHE_HOME", d.c_str());
  std::ostringstream log;
  for (const auto provider : {GemmChoice::OpenBLAS, GemmChoice::OneDNN}) {
    if (!kernels::gemm_provider_available(gemm_provider_of(provider))) continue;
    const std::string p = choice_name(provider);
    SCOPED_TRACE(p);
    const TrainConfig straight = bf16_run(d, "straight_" + p, provider);
    train_lm(straight, log);
    // The checkpoint holds float32 tensors, as PyTorch's autocast leaves its parameters.
    const SafeTensorsFile f = SafeTensorsFile::load((fs::path(straight.out_dir) / "model.safetensors").string());
    for (const auto& name : f.names()) EXPECT_EQ(f.info(name).dtype, "F32") << name;
    for (int64_t k : {0, 57, 80})
      expect_cut_run_resumes_exactly(bf16_run(d, "cut" + std::to_string(k) + "_" + p, provider), k, straight.out_dir, log);
  }
  EXPECT_NE(log.str().find("precision: bf16 autocast"), std::string::npos) << log.str();
}

TEST(PrecisionRun, Bf16TrainsLikeFloat32ButIsNotFloat32) {
  const fs::path d = temp_dir("bf16_quality");
  ScopedEnv xdg("XDG_CACHE_HOME", d.c_str());
  std::ostringstream log;
  TrainConfig fp32 = small_run(d, "fp32"), bf16 = small_run(d, "bf16");
  fp32.gemm = bf16.gemm = GemmChoice::OpenBLAS;
  bf16.precision = Precision::BF16;
  train_lm(fp32, log);
  train_lm(bf16, log);
  EXPECT_NE(losses(fp32.out_dir), losses(bf16.out_dir));  // the GEMMs did round
  EXPECT_NEAR(last_val_loss(bf16.out_dir), last_val_loss(fp32.out_dir), 0.05);
}

TEST(PrecisionRun, AutoChoosesRecordsAndKeepsItsChoice) {
  const fs::path d = temp_dir("gemm_auto");
  ScopedEnv xdg("XDG_CACHE_HOME", d.c_str());
  std::ostringstream log;
  TrainConfig c = small_run(d, "auto");
  c.iters = 30;
  c.eval_every = 10;
  ASSERT_EQ(c.gemm, GemmChoice::Auto);  // the default
  const RunHooks hooks = interrupt_after(12);
  EXPECT_TRUE(train_lm(c, log, hooks).interrupted);
  const std::string first_log = log.str();
  EXPECT_NE(first_log.find("chosen by --gemm auto: "), std::string::npos) << first_log;
  EXPECT_NE(first_log.find("measured now, kept in " + (d / "attograd" / "peak_flops.json").string()), std::string::npos)
      << first_log;
  // Recorded: the provider, never auto, in the train state and in config.toml.
  const LoadedTrainState st = read_train_state((fs::path(c.out_dir) / "train_state.safetensors").string());
  ASSERT_NE(st.config.gemm, GemmChoice::Auto);
  const std::string chosen = choice_name(st.config.gemm);
  EXPECT_NE(read_bytes(fs::path(c.out_dir) / "config.toml").find("gemm = '" + chosen + "'"), std::string::npos);
  EXPECT_NE(first_log.find("gemm: " + chosen), std::string::npos) << first_log;
  // The process's provider is back to what it was once the run is over.
  EXPECT_EQ(kernels::gemm_provider(), kernels::GemmProvider::OpenBLAS);

  // A second run of the same shape reads the kept timings: the same choice, not measured again.
  TrainConfig again = small_run(d, "auto_again");
  again.iters = 2;
  std::ostringstream log2;
  train_lm(again, log2);
  EXPECT_NE(log2.str().find("gemm: " + chosen), std::string::npos) << log2.str();
  EXPECT_NE(log2.str().find("(kept)"), std::string::npos) << log2.str();

  // On resume: --gemm auto keeps the recorded choice; the other provider and another
  // precision are refused with the recorded value.
  const GemmChoice other = st.config.gemm == GemmChoice::OneDNN ? GemmChoice::OpenBLAS : GemmChoice::OneDNN;
  TrainConfig now;
  now.gemm = other;
  std::string e = refusal([&] { resume_lm(c.out_dir, now, {"gemm"}, log); });
  EXPECT_NE(e.find(std::string("--gemm ") + choice_name(other) + " cannot continue the run in " + c.out_dir), std::string::npos) << e;
  EXPECT_NE(e.find("it was recorded with --gemm " + chosen), std::string::npos) << e;
  now = TrainConfig();
  now.precision = Precision::BF16;
  e = refusal([&] { resume_lm(c.out_dir, now, {"precision"}, log); });
  EXPECT_NE(e.find("it was recorded with --precision fp32"), std::string::npos) << e;
  now = TrainConfig();  // gemm auto, precision fp32: as recorded
  std::ostringstream log3;
  EXPECT_FALSE(resume_lm(c.out_dir, now, {"gemm", "precision"}, log3).interrupted);
  EXPECT_NE(log3.str().find("gemm: " + chosen + " "), std::string::npos) << log3.str();
  EXPECT_NE(log3.str().find("--gemm " + chosen), std::string::npos) << log3.str();  // recorded, not measured again
}

// --gemm-bf16 matmul: the run names oneDNN's matmul primitive in its header, records the
// interface in its train state and config.toml, resumes on it to the same bits (--gemm-bf16
// auto on resume: the recorded one), and refuses the other interface naming the recorded one.
TEST(PrecisionRun, TheBf16InterfaceIsNamedRecordedAndKeptOnResume) {
  if (!kernels::bf16_api_available(kernels::Bf16Api::Matmul)) GTEST_SKIP() << "no oneDNN matmul primitive here";
  const fs::path d = temp_dir("bf16_matmul");
  ScopedEnv xdg("XDG_CACHE_HOME", d.c_str());
  std::ostringstream log;
  auto matmul_run = [&](const std::string& name) {
    TrainConfig c = bf16_run(d, name, GemmChoice::OneDNN);
    c.gemm_bf16 = GemmBf16Choice::Matmul;
    return c;
  };
  const TrainConfig straight = matmul_run("straight");
  train_lm(straight, log);
  EXPECT_NE(log.str().find("bf16 GEMMs native: oneDNN's matmul primitive ("), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("bf16 GEMMs through oneDNN's matmul, --gemm-bf16 matmul"), std::string::npos) << log.str();
  EXPECT_EQ(kernels::bf16_api(), kernels::Bf16Api::Gemm);  // the process's own again after the run
  const LoadedTrainState st = read_train_state((fs::path(straight.out_dir) / "train_state.safetensors").string());
  EXPECT_EQ(st.config.gemm_bf16, GemmBf16Choice::Matmul);
  EXPECT_NE(read_bytes(fs::path(straight.out_dir) / "config.toml").find("gemm-bf16 = 'matmul'"), std::string::npos);
  expect_cut_run_resumes_exactly(matmul_run("cut"), 57, straight.out_dir, log);

  TrainConfig now;
  now.gemm_bf16 = GemmBf16Choice::Gemm;
  const std::string e = refusal([&] { resume_lm(straight.out_dir, now, {"gemm-bf16"}, log); });
  EXPECT_NE(e.find("--gemm-bf16 gemm cannot continue the run in " + straight.out_dir), std::string::npos) << e;
  EXPECT_NE(e.find("it was recorded with --gemm-bf16 matmul"), std::string::npos) << e;
}

// --gemm-bf16 auto in a bf16 run on oneDNN: chosen by timing (named in the header with its
// figures), recorded as the interface it chose, never auto.
TEST(PrecisionRun, Bf16InterfaceAutoChoosesAndRecordsItsChoice) {
  if (!kernels::bf16_api_available(kernels::Bf16Api::Matmul)) GTEST_SKIP() << "no oneDNN matmul primitive here";
  const fs::path d = temp_dir("bf16_api_auto");
  ScopedEnv xdg("XDG_CACHE_HOME", d.c_str());
  std::ostringstream log;
  TrainConfig c = bf16_run(d, "auto", GemmChoice::OneDNN);
  c.iters = 3;
  ASSERT_EQ(c.gemm_bf16, GemmBf16Choice::Auto);  // the default
  train_lm(c, log);
  EXPECT_NE(log.str().find("chosen by --gemm-bf16 auto: "), std::string::npos) << log.str();
  const LoadedTrainState st = read_train_state((fs::path(c.out_dir) / "train_state.safetensors").string());
  EXPECT_NE(st.config.gemm_bf16, GemmBf16Choice::Auto);
  EXPECT_NE(log.str().find("bf16 GEMMs through oneDNN's " + choice_name(st.config.gemm_bf16)), std::string::npos)
      << log.str();
}
