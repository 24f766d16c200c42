// Exact resume, interruption, non-finite values, crash-safe checkpoints and bad train states.
#include <gtest/gtest.h>

#include "tests/small_run.h"
#include "tests/test_util.h"
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograd/safetensors.h"
#include "models/transformer_lm.h"
#include "train/run_folder/checkpoint.h"
#include "train/run_folder/metadata_seal.h"
#include "train/run_folder/train_state.h"
#include "train/schedule.h"
#include "train/time_budget.h"
#include "train/trainer.h"

using namespace ag;
using namespace ag::train;
namespace fs = std::filesystem;
using namespace ag::testing_util;

namespace {

// The gradient of the parameter `name` (through the model interface, as the trainer sees it).
Tensor grad_of(const models::LanguageModel& m, const std::string& name) {
  for (const auto& [n, p] : m.named_parameters())
    if (n == name) return p.grad();
  throw std::invalid_argument("no parameter " + name);
}

// (iter, train_loss, val_loss) of every metrics line, as exact JSON text.
std::vector<std::string> losses(const fs::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) {
    const auto j = nlohmann::json::parse(l);
    out.push_back(j["iter"].dump() + " " + j["train_loss"].dump() + " " + j["val_loss"].dump());
  }
  return out;
}
}  // namespace

// Every run compared bit for bit in this file runs in this one process, on one thread count and
// one BLAS kernel, with the same shapes in the same order as the run it is compared with: what
// the code guarantees (docs/checkpoints.md, "Determinism").
TEST(Resume, InterruptedAndResumedRunsEndBitIdentical) {
  const fs::path d = temp_dir("resume_exact");
  std::ostringstream log;
  const TrainConfig straight = small_run(d, "straight");
  train_lm(straight, log);
  const std::string want_model = read_bytes(fs::path(straight.out_dir) / "model.safetensors");
  const auto want_losses = losses(straight.out_dir);
  ASSERT_EQ(want_losses.size(), 300u + 4u);

  // Interrupt with a real SIGINT after step k (mid-interval, right before and at an eval,
  // the first and the last step), then resume.
  for (int64_t k : {0, 57, 99, 100, 299}) {
    SCOPED_TRACE("interrupted after iter " + std::to_string(k));
    TrainConfig c = small_run(d, "cut" + std::to_string(k));
    RunHooks hooks;
    hooks.after_step = [k](int64_t it) {
      if (it == k) std::raise(SIGINT);
    };
    const auto first = train_lm(c, log, hooks);
    EXPECT_TRUE(first.interrupted);
    EXPECT_EQ(first.iters, k + 1);
    const auto second = resume_lm(c.out_dir, "", 0, false, log);
    EXPECT_FALSE(second.interrupted);
    EXPECT_EQ(read_bytes(fs::path(c.out_dir) / "model.safetensors"), want_model);
    EXPECT_EQ(losses(c.out_dir), want_losses);
  }
  EXPECT_NE(log.str().find("resume with: attograd train --resume"), std::string::npos);
  // Keeps the best model by validation loss next to the latest.
  EXPECT_TRUE(fs::exists(fs::path(straight.out_dir) / "model.best.safetensors"));
  EXPECT_NO_THROW(load_model((fs::path(straight.out_dir) / "model.best.safetensors").string()));
}

TEST(Resume, NonFiniteGradientStopsAndNamesTheParameter) {
  const fs::path d = temp_dir("resume_nan");
  TrainConfig c = small_run(d, "run");
  c.iters = 40;
  c.eval_every = 10;
  RunHooks hooks;
  hooks.after_backward = [](models::LanguageModel& m) {
    static int calls = 0;
    if (++calls == 25) {  // iter 24
      Tensor g = grad_of(m, "blocks.0.mlp.fc.weight");
      g.data<float>()[3] = NAN;
    }
  };
  std::ostringstream log;
  try {
    train_lm(c, log, hooks);
    FAIL() << "a NaN gradient went through";
  } catch (const NonFiniteError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("iter 24"), std::string::npos) << m;
    EXPECT_NE(m.find("blocks.0.mlp.fc.weight"), std::string::npos) << m;
  }
  // The last good checkpoint (iter 20) is intact and resumable.
  const auto st = read_train_state((fs::path(c.out_dir) / "train_state.safetensors").string());
  EXPECT_EQ(st.pos.iter, 20);
  EXPECT_NO_THROW(load_model(c.out_dir));
}

TEST(Resume, SkipNonFiniteSkipsAndCounts) {
  const fs::path d = temp_dir("resume_skip");
  TrainConfig c = small_run(d, "run");
  c.iters = 30;
  c.skip_nonfinite = true;
  RunHooks hooks;
  hooks.after_backward = [](models::LanguageModel& m) {
    static int calls = 0;
    ++calls;
    if (calls == 5 || calls == 9) grad_of(m, "tok_emb.weight").data<float>()[0] = INFINITY;
  };
  std::ostringstream log;
  const auto s = train_lm(c, log, hooks);
  EXPECT_EQ(s.skipped_updates, 2);
  EXPECT_TRUE(std::isfinite(s.val_loss));
  EXPECT_NE(log.str().find("update skipped"), std::string::npos);
}

TEST(Resume, KillNineDuringCheckpointWritesLeavesALoadableModel) {
  const fs::path d = temp_dir("resume_kill");
  models::TransformerLM m(models::GPTConfig{5, 2, 2, 32, 32, 0.0});
  const auto tok = data::CharTokenizer::from_chars({"a", "b", "c", "d", "e"});
  const std::string path = (d / "model.safetensors").string();
  save_model(path, m, tok);
  for (int round = 0; round < 8; ++round) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // child: rewrite the checkpoint forever
      for (;;) save_model(path, m, tok);
    }
    usleep(2000 + 3000 * round);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    EXPECT_NO_THROW(load_model(path)) << "round " << round;
  }
}

TEST(Resume, BadTrainStatesAreRefused) {
  const fs::path d = temp_dir("resume_badstate");
  TrainConfig c = small_run(d, "run");
  c.iters = 5;
  std::ostringstream log;
  train_lm(c, log);
  const fs::path state = fs::path(c.out_dir) / "train_state.safetensors";
  const auto good = SafeTensorsFile::load(state.string());
  auto rewrite = [&](auto edit_tensors, auto edit_meta) {
    std::vector<std::pair<std::string, Tensor>> ts;
    for (const auto& n : good.names()) ts.emplace_back(n, good.get(n));
    auto md = good.metadata();
    edit_tensors(ts);
    edit_meta(md);
    seal_metadata(md);  // a consistent seal, so that the checks behind it are reached
    save_safetensors(state.string(), ts, md);
  };
  auto expect_error = [&](const std::string& needle, const std::string& data = "") {
    try {
      resume_lm(c.out_dir, data, 0, false, log);
      ADD_FAILURE() << "resumed; expected an error about " << needle;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto none = [](auto&) {};
  // A train state from a different configuration: tensors do not fit n_embd.
  rewrite(none, [](auto& md) {
    auto j = nlohmann::json::parse(md["config"]);
    j["n_embd"] = 32;
    md["config"] = j.dump();
  });
  expect_error("different configuration");
  rewrite(none, [&](auto& md) { md = good.metadata(); });  // back to good
  // Missing and extra tensors.
  rewrite([](auto& ts) { ts.pop_back(); }, none);
  expect_error("is missing");
  rewrite([&](auto& ts) { ts.emplace_back("model.extra", Tensor::zeros({1})); }, none);
  expect_error("unexpected tensor 'model.extra'");
  // Broken metadata.
  rewrite([](auto&) {}, [](auto& md) { md.erase("rng.batch"); });
  expect_error("rng.batch");
  rewrite([](auto&) {}, [](auto& md) { md["config"] = "{not json"; });
  expect_error("config");
  // A corpus whose vocabulary differs from the state's.
  rewrite([](auto&) {}, [&](auto& md) { md = good.metadata(); });
  const std::string other = (d / "other.txt").string();
  std::ofstream(other) << read_bytes(corpus(d)) << "XYZ";
  expect_error("does not match the train state", other);
  // Truncated, empty and random files.
  const std::string full = read_bytes(state);
  std::ofstream(state, std::ios::binary | std::ios::trunc) << full.substr(0, full.size() / 2);
  expect_error("train_state.safetensors");
  std::ofstream(state, std::ios::binary | std::ios::trunc);
  expect_error("train_state.safetensors");
  std::ofstream(state, std::ios::binary | std::ios::trunc) << "\x13\x37 random bytes, not a safetensors file at all";
  expect_error("train_state.safetensors");
  fs::remove(state);
  expect_error("not found");
}

// --resume DIR --iters N: exact when the steps taken have the same learning rate under both
// schedules, refused (with the reason) otherwise.
namespace {
TrainSummary resume_with_iters(const std::string& dir, int64_t iters, std::ostream& log) {
  TrainConfig now;
  now.iters = iters;
  now.no_progress = true;
  return resume_lm(dir, now, {"iters"}, log);
}
}  // namespace

namespace {
// A straight run of `iters` steps, and a run planned for 30 cut after step 10 (inside the
// 20-step warmup) and then resumed with --iters `iters`; `resumed` gets the resume's log.
struct CutThenResumed {
  TrainConfig straight, cut;
  TrainSummary summary;
};
CutThenResumed cut_then_resume(const fs::path& d, int64_t iters, int64_t eval_every, std::ostream& resumed) {
  std::ostringstream log;
  CutThenResumed r;
  r.straight = small_run(d, "straight" + std::to_string(iters));
  r.straight.iters = iters;
  r.straight.eval_every = eval_every;
  train_lm(r.straight, log);
  r.cut = small_run(d, "cut_then_" + std::to_string(iters));
  r.cut.iters = 30;
  r.cut.eval_every = eval_every;
  RunHooks hooks;
  hooks.after_step = [](int64_t it) {
    if (it == 10) std::raise(SIGINT);
  };
  EXPECT_TRUE(train_lm(r.cut, log, hooks).interrupted);
  r.summary = resume_with_iters(r.cut.out_dir, iters, resumed);
  return r;
}
}  // namespace

TEST(Resume, ExtendingARunWithinItsWarmupEqualsTheLongerRun) {
  std::ostringstream log;
  const auto r = cut_then_resume(temp_dir("resume_extend_warmup"), 60, 30, log);
  EXPECT_EQ(r.summary.iters, 60);
  EXPECT_NE(log.str().find("extending the run from 30 to 60 iters"), std::string::npos) << log.str();
  const fs::path cut = r.cut.out_dir, straight = r.straight.out_dir;
  EXPECT_EQ(read_bytes(cut / "model.safetensors"), read_bytes(straight / "model.safetensors"));
  EXPECT_EQ(losses(cut), losses(straight));
  EXPECT_NE(read_bytes(cut / "config.toml").find("iters = 60"), std::string::npos);
}

TEST(Resume, ShorteningARunWithinItsWarmupSaysSoAndEqualsTheShorterRun) {
  std::ostringstream log;
  const auto r = cut_then_resume(temp_dir("resume_shorten_warmup"), 15, 15, log);
  EXPECT_EQ(r.summary.iters, 15);
  EXPECT_NE(log.str().find("shortening the run from 30 to 15 iters"), std::string::npos) << log.str();
  const fs::path cut = r.cut.out_dir, straight = r.straight.out_dir;
  EXPECT_EQ(read_bytes(cut / "model.safetensors"), read_bytes(straight / "model.safetensors"));
  EXPECT_EQ(losses(cut), losses(straight));
}

TEST(Resume, ExtendingAFinishedRunWithAConstantLrEqualsTheLongerRun) {
  const fs::path d = temp_dir("resume_extend_const");
  std::ostringstream log;
  TrainConfig straight = small_run(d, "straight60");
  straight.iters = 60;
  straight.eval_every = 30;
  straight.min_lr = straight.lr;  // after the warmup, the lr no longer depends on iters
  train_lm(straight, log);
  TrainConfig c = straight;
  c.out_dir = (d / "finished30").string();
  c.iters = 30;
  const auto first = train_lm(c, log);
  const auto s = resume_with_iters(c.out_dir, 60, log);
  EXPECT_EQ(s.iters, 60);
  EXPECT_NE(s.val_loss, first.val_loss);
  EXPECT_EQ(read_bytes(fs::path(c.out_dir) / "model.safetensors"), read_bytes(fs::path(straight.out_dir) / "model.safetensors"));
  EXPECT_EQ(losses(c.out_dir), losses(straight.out_dir));
}

TEST(Resume, ExtendingPastTheDecayIsRefusedWithTheReason) {
  const fs::path d = temp_dir("resume_extend_refused");
  std::ostringstream log;
  TrainConfig c = small_run(d, "finished");
  c.iters = 30;
  c.eval_every = 30;
  train_lm(c, log);
  const std::string before = read_bytes(fs::path(c.out_dir) / "train_state.safetensors");
  try {
    resume_with_iters(c.out_dir, 60, log);
    ADD_FAILURE() << "extended a run whose decayed steps would change";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("step 21 used lr"), std::string::npos) << m;  // the first step after the 20-step warmup
    EXPECT_NE(m.find("--init-from"), std::string::npos) << m;
  }
  EXPECT_THROW(resume_with_iters(c.out_dir, 20, log), std::invalid_argument);  // fewer than taken
  EXPECT_EQ(read_bytes(fs::path(c.out_dir) / "train_state.safetensors"), before);  // untouched
}

TEST(Resume, ResumingAFinishedRunReportsItsValLossAndTime) {
  const fs::path d = temp_dir("resume_finished_report");
  std::ostringstream log;
  TrainConfig c = small_run(d, "finished");
  c.iters = 30;
  c.eval_every = 30;
  const auto first = train_lm(c, log);
  std::ostringstream again;
  const auto s = resume_lm(c.out_dir, "", 0, false, again);
  EXPECT_EQ(s.val_loss, first.val_loss);
  EXPECT_EQ(s.train_loss, first.train_loss);
  EXPECT_GT(s.seconds, 0.0);
  EXPECT_GE(s.seconds + 0.05, first.seconds);  // the time saved at the last checkpoint, not zero
  EXPECT_NE(again.str().find("val loss " + std::to_string(first.val_loss).substr(0, 4)), std::string::npos) << again.str();
}

// --sample-every prints samples during training from a generator of its own: the run's
// weights and losses are the same as without it.
TEST(Resume, SampleEveryPrintsAndLeavesTheRunUnchanged) {
  const fs::path d = temp_dir("sample_every");
  std::ostringstream log;
  TrainConfig plain = small_run(d, "plain");
  plain.iters = 30;
  train_lm(plain, log);
  TrainConfig c = small_run(d, "sampled");
  c.iters = 30;
  c.sample_every = 10;
  std::ostringstream out;
  train_lm(c, out);
  EXPECT_NE(out.str().find("---- sample at iter 10 ----"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("---- sample at iter 20 ----"), std::string::npos);
  EXPECT_EQ(out.str().find("---- sample at iter 30 ----"), std::string::npos);  // the end has its own
  EXPECT_EQ(read_bytes(fs::path(c.out_dir) / "model.safetensors"), read_bytes(fs::path(plain.out_dir) / "model.safetensors"));
  EXPECT_EQ(losses(c.out_dir), losses(plain.out_dir));
}

// A run folder written by the trainer's previous optimizer (tests/fixtures/run_before_optim,
// made by commit c0c0b6b's attograd) resumes on ag::optim::AdamW: the train state's format is
// the same (moments by parameter name, one adam_step), and the extended run reaches the losses
// the old trainer reached in one go (to 1e-6: the fixture's bits came from another build's
// BLAS kernels; on the machine that made it they are equal).
TEST(Resume, ARunFolderOfTheOldOptimizerResumesToTheSameLosses) {
  const fs::path src = fs::path(ATTOGRAD_SOURCE_DIR) / "tests/fixtures/run_before_optim";
  const fs::path d = temp_dir("resume_old_optimizer") / "run";
  fs::create_directories(d);
  for (const char* f : {"train_state.safetensors", "metrics.jsonl", "config.toml"}) fs::copy_file(src / f, d / f);
  TrainConfig now;
  now.iters = 20;
  now.threads = 1;
  now.no_progress = true;
  now.data_path = (fs::path(ATTOGRAD_SOURCE_DIR) / "tests/cli/small_corpus.txt").string();
  std::ostringstream log;
  resume_lm(d.string(), now, {"iters", "data", "threads"}, log);
  const auto got = read_lines(d / "metrics.jsonl"), want = read_lines(src / "expected_metrics_20.jsonl");
  ASSERT_EQ(got.size(), want.size()) << log.str();
  for (size_t i = 0; i < got.size(); ++i) {
    const auto g = nlohmann::json::parse(got[i]), w = nlohmann::json::parse(want[i]);
    EXPECT_EQ(g["iter"], w["iter"]) << i;
    EXPECT_EQ(g["lr"], w["lr"]) << i;
    for (const char* k : {"train_loss", "val_loss"}) {
      if (w[k].is_null()) {
        EXPECT_TRUE(g[k].is_null()) << i << " " << k;
        continue;
      }
      EXPECT_NEAR(g[k].get<double>(), w[k].get<double>(), 1e-6 * w[k].get<double>()) << i << " " << k;
    }
  }
}

// The speedrun's recipe resumes exactly too: the modern model, Muon's momentum buffers beside
// AdamW's moments, and the warmup-stable-decay schedule.
TEST(Resume, ModernModelWithMuonAndWsdResumesBitIdentical) {
  const fs::path d = temp_dir("resume_modern");
  std::ostringstream log;
  auto modern = [&](const std::string& name) {
    TrainConfig c = small_run(d, name);
    c.model.name = "modern";
    c.optimizer = "muon";
    c.schedule = "wsd";
    c.embed_lr = 0.05;               // the token embedding in an AdamW group of its own
    c.eval_iters = kEvalWholeSplit;  // and the whole-split evaluation, deterministic
    return c;
  };
  const TrainConfig straight = modern("straight");
  train_lm(straight, log);
  const std::string want_model = read_bytes(fs::path(straight.out_dir) / "model.safetensors");
  const auto want_losses = losses(straight.out_dir);
  for (int64_t k : {57, 100, 250}) {  // in the stable phase, at an evaluation, in the decay
    SCOPED_TRACE("interrupted after iter " + std::to_string(k));
    TrainConfig c = modern("cut" + std::to_string(k));
    RunHooks hooks;
    hooks.after_step = [k](int64_t it) {
      if (it == k) std::raise(SIGINT);
    };
    EXPECT_TRUE(train_lm(c, log, hooks).interrupted);
    EXPECT_FALSE(resume_lm(c.out_dir, "", 0, false, log).interrupted);
    EXPECT_EQ(read_bytes(fs::path(c.out_dir) / "model.safetensors"), want_model);
    EXPECT_EQ(losses(c.out_dir), want_losses);
  }
  // The train state keeps Muon's buffers for the table's Matrix rows, AdamW's moments for the rest.
  const SafeTensorsFile st = SafeTensorsFile::load((fs::path(straight.out_dir) / "train_state.safetensors").string());
  EXPECT_TRUE(st.has("muon.momentum_buffer.blocks.0.attn.in_proj_weight"));
  EXPECT_TRUE(st.has("adam.exp_avg.tok_emb.weight"));
  EXPECT_FALSE(st.has("adam.exp_avg.blocks.0.mlp.fc.weight"));
}

namespace {
// A small run under a time budget of `seconds`, with only the final evaluation.
TrainConfig budget_run(const fs::path& d, const std::string& name, double seconds) {
  TrainConfig c = small_run(d, name);
  c.schedule = "wsd";
  c.time_budget = seconds;
  c.iters = 1000000;  // a cap the budget stays below
  c.eval_every = 1000000;
  c.log_every = 1000000;
  return c;
}
}  // namespace

// --time-budget fixes the step count after the probe steps and records it: a run interrupted
// after that ends, resumed, at the count it fixed (its schedule's, not the cap).
TEST(Resume, TimeBudgetRecordsTheStepCountItFixes) {
  const fs::path d = temp_dir("resume_budget");
  std::ostringstream log;
  const TrainConfig c = budget_run(d, "budget", 3);
  RunHooks hooks;
  hooks.after_step = [](int64_t it) {
    if (it == kBudgetProbeEnd + 5) std::raise(SIGINT);
  };
  EXPECT_TRUE(train_lm(c, log, hooks).interrupted);
  const LoadedTrainState saved = read_train_state((fs::path(c.out_dir) / "train_state.safetensors").string());
  const int64_t fixed = saved.config.iters;
  EXPECT_GT(fixed, kBudgetProbeEnd + 5);
  EXPECT_LT(fixed, c.iters);
  EXPECT_NE(log.str().find("time budget 3s: " + std::to_string(fixed) + " steps"), std::string::npos) << log.str();
  EXPECT_EQ(resume_lm(c.out_dir, "", 0, false, log).iters, fixed);
}

// The count is fixed after the probe and again where that count's stable phase ends, from every
// step timed by then; the run ends at the second count (when the steps grew slower, a smaller one
// whose decay begins there, its fraction recorded as the cooldown), and records both.
TEST(TimeBudget, TheCountIsFixedAgainWhereTheStablePhaseEnds) {
  const fs::path d = temp_dir("budget_refit");
  std::ostringstream log;
  TrainConfig c = budget_run(d, "refit", 3);
  c.cooldown = 0.2;  // the second fix after 80% of the count: past the probe even in a slow (sanitizer) build
  const TrainSummary s = train_lm(c, log);
  std::vector<int64_t> counts;
  const std::string text = log.str();
  for (size_t at = text.find("time budget 3s: "); at != std::string::npos; at = text.find("time budget 3s: ", at + 1))
    counts.push_back(std::stoll(text.substr(at + 16)));
  ASSERT_EQ(counts.size(), 2u) << text;
  EXPECT_EQ(s.iters, counts[1]);
  const TrainConfig saved = read_train_state((fs::path(c.out_dir) / "train_state.safetensors").string()).config;
  EXPECT_EQ(saved.iters, counts[1]);
  const size_t last = text.rfind("time budget 3s: ");
  const size_t in_decay = text.find("the last ", last);
  ASSERT_NE(in_decay, std::string::npos) << text;
  EXPECT_EQ(LrSchedule::decay_steps(saved.cooldown, saved.iters), std::stoll(text.substr(in_decay + 9))) << text;
}

// The steps of a run whose count was fixed again with a shorter decay are those of a run given
// that count and decay from the start: the recorded configuration reproduces its schedule.
TEST(TimeBudget, ADecayShortenedWhereTheStablePhaseEndsKeepsTheStepsTaken) {
  TrainConfig c;
  c.schedule = "wsd";
  c.lr = 0.01;
  c.min_lr = 0;
  c.warmup = 0;
  c.iters = 400;
  c.cooldown = 0.5;  // the stable phase ends at 200
  const LrSchedule before(c);
  c.iters = 300;  // slower steps: 100 more, all in the decay
  c.cooldown = 100.0 / 300.0;
  const LrSchedule after(c);
  EXPECT_EQ(LrSchedule::decay_steps(c.cooldown, c.iters), 100);
  for (int64_t k = 0; k <= 200; ++k) EXPECT_EQ(after.lr(k), before.lr(k)) << k;
  EXPECT_LT(after.lr(201), after.lr(200));
}

TEST(TimeBudget, TheStepCountFillsWhatTheFinalEvaluationLeaves) {
  // 100 s budget less its 2 s spare, 10 s gone, 0.5 s a step, 20 s of evaluation: 10 steps
  // done + 136 more.
  EXPECT_EQ(iters_for_budget(100, 10, 0.5, 20, 10, 1000000), 146);
  EXPECT_EQ(iters_for_budget(100, 10, 0.5, 20, 10, 120), 120);  // the cap
  EXPECT_EQ(iters_for_budget(100, 95, 0.5, 20, 10, 1000), 10);   // spent: no more steps
  EXPECT_EQ(iters_for_budget(100, 10, 0.0, 20, 10, 1000), 10);   // nothing timed
}
