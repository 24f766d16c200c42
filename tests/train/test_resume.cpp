// Exact resume, interruption, non-finite values, crash-safe checkpoints and bad train states.
#include <gtest/gtest.h>

#include "tests/train/small_run.h"
#include "tests/test_util.h"
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograd/safetensors.h"
#include "models/registry.h"
#include "models/transformer_lm.h"
#include "train/run_folder/checkpoint.h"
#include "train/run_folder/metadata_seal.h"
#include "train/run_folder/train_state.h"
#include "train/schedules/registry.h"
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
    const RunHooks hooks = interrupt_after(k);
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

// --generator torch: the model's init and dropout, the batches and the evaluations draw torch's
// stream, whose 632-word states a checkpoint keeps and a resume continues exactly.
TEST(Resume, ATorchStreamRunResumesBitIdentical) {
  const fs::path d = temp_dir("resume_torch_stream");
  std::ostringstream log;
  auto run = [&](const std::string& name, GeneratorKind kind) {
    TrainConfig c = small_run(d, name);
    c.iters = 60, c.eval_every = 20, c.generator = kind;
    return c;
  };
  const TrainConfig straight = run("straight", GeneratorKind::Torch), own = run("own", GeneratorKind::Attograd);
  train_lm(straight, log);
  train_lm(own, log);
  EXPECT_NE(losses(own.out_dir), losses(straight.out_dir));  // another stream
  EXPECT_EQ(read_train_state((fs::path(straight.out_dir) / "train_state.safetensors").string()).pos.rng_batch.size(), 632u);
  const TrainConfig cut = run("cut", GeneratorKind::Torch);
  EXPECT_TRUE(train_lm(cut, log, interrupt_after(33)).interrupted);
  resume_lm(cut.out_dir, "", 0, false, log);
  EXPECT_EQ(read_bytes(fs::path(cut.out_dir) / "model.safetensors"), read_bytes(fs::path(straight.out_dir) / "model.safetensors"));
  EXPECT_EQ(losses(cut.out_dir), losses(straight.out_dir));
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
  // Missing and extra tensors: a weight, a part of the optimizer's state.
  rewrite([](auto& ts) { std::erase_if(ts, [](const auto& t) { return t.first == "model.ln_f.weight"; }); }, none);
  expect_error("tensor 'model.ln_f.weight' is missing");
  for (const char* key : {"step", "exp_avg_sq"}) {
    rewrite([&](auto& ts) { std::erase_if(ts, [&](const auto& t) { return t.first == std::string("optimizer.state.3.") + key; }); },
            none);
    expect_error(std::string("AdamW.load_state_dict: a parameter's state lacks ") + key);
  }
  rewrite([](auto& ts) { ts.emplace_back("optimizer.state.99.exp_avg", Tensor::zeros({1})); }, none);
  expect_error("unexpected tensor 'optimizer.state.99.exp_avg'");
  rewrite([](auto&) {}, [](auto& md) {
    auto groups = nlohmann::json::parse(md["optimizer.param_groups"]);
    groups[1]["momentum"] = 0.9;  // an option AdamW has not
    md["optimizer.param_groups"] = groups.dump();
  });
  expect_error("group 1: unknown option 'momentum'");
  rewrite([](auto&) {}, [](auto& md) { md["optimizer.param_groups"] = "[{\"params\": [0, 0]}]"; });
  expect_error("'optimizer.param_groups' is not an optimizer's parameter groups");
  rewrite([](auto&) {}, [&](auto& md) { md = good.metadata(); });
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
  const RunHooks hooks = interrupt_after(10);
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
  // The clock carries on from the time saved at the last checkpoint, which was written after the
  // last evaluation's metrics line: never less than that line's elapsed_s, whatever the load.
  double last_eval_s = -1;
  std::ifstream metrics(fs::path(c.out_dir) / "metrics.jsonl");
  for (std::string l; std::getline(metrics, l);) last_eval_s = nlohmann::json::parse(l)["elapsed_s"].get<double>();
  ASSERT_GT(last_eval_s, 0.0);
  EXPECT_GE(s.seconds, last_eval_s);
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

namespace {
// Resumes the run folder of tests/fixtures/<name> (train_state.safetensors at iter 10) to 20
// iterations and compares its metrics with the fixture's expected_metrics_20.jsonl, which the
// same binary made in one go (the learning rates exactly; the losses to 1e-6: the fixture's bits
// came from another build's BLAS kernels, and on the machine that made them they are equal).
void expect_fixture_resumes_to_its_losses(const std::string& name) {
  const fs::path src = fs::path(ATTOGRAD_SOURCE_DIR) / "tests/fixtures" / name;
  const fs::path d = temp_dir("resume_" + name) / "run";
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
  const size_t copied = read_lines(src / "metrics.jsonl").size();  // the 10-iteration run's own lines
  ASSERT_EQ(got.size(), want.size()) << log.str();
  for (size_t i = 0; i < got.size(); ++i) {
    const auto g = nlohmann::json::parse(got[i]), w = nlohmann::json::parse(want[i]);
    EXPECT_EQ(g["iter"], w["iter"]) << i;
    if (i >= copied) {  // (the 10-iteration run's last line showed the rate after its own end)
      EXPECT_EQ(g["lr"], w["lr"]) << i;
    }
    for (const char* k : {"train_loss", "val_loss"}) {
      if (w[k].is_null()) {
        EXPECT_TRUE(g[k].is_null()) << i << " " << k;
        continue;
      }
      EXPECT_NEAR(g[k].get<double>(), w[k].get<double>(), 1e-6 * w[k].get<double>()) << i << " " << k;
    }
  }
}
}  // namespace

// A run folder written by the trainer's first optimizer (tests/fixtures/run_before_optim,
// made by commit c0c0b6b's attograd, before ag::optim) resumes: moments by parameter name and
// one adam_step, read by the old layout's reader (train/run_folder/train_state_v1.h).
TEST(Resume, ARunFolderOfTheOldOptimizerResumesToTheSameLosses) { expect_fixture_resumes_to_its_losses("run_before_optim"); }

// A run folder written before the train state held the optimizer's state dict
// (tests/fixtures/run_before_state_dict, commit 6f1d171's attograd): the speedrun's recipe, Muon's
// momentum and AdamW's moments under their old names, resumes to the losses that binary reached.
TEST(Resume, ARunFolderOfTheOldLayoutWithMuonResumesToTheSameLosses) {
  expect_fixture_resumes_to_its_losses("run_before_state_dict");
}

namespace {
// The train state `state` in the layout written before the state dict (train_state_v1.h): the
// optimizer's state under the parameters' names, one adam_step, no param_groups; the rest as it
// is. The optimizer its configuration builds says which parameter each position is.
void rewrite_in_the_old_layout(const fs::path& state) {
  const SafeTensorsFile f = SafeTensorsFile::load(state.string());
  const TrainConfig cfg = read_train_state(f).config;
  Generator g(0);
  const auto model = models::find_model(cfg.model.name).make(cfg.model, DType::Float32, g);
  const auto opt = cfg.optimizer->build(*model, cfg);
  std::map<const TensorImpl*, std::string> name_of;
  for (const auto& [n, p] : model->named_parameters()) name_of[&p.impl()] = n;
  std::vector<std::string> position;  // parameter i's name
  for (size_t k = 0; k < opt->num_param_groups(); ++k)
    for (const Tensor& p : opt->group_params(k)) position.push_back(name_of.at(&p.impl()));
  std::vector<std::pair<std::string, Tensor>> ts;
  std::string adam_step = "0";
  for (const auto& n : f.names()) {
    if (n.rfind("model.", 0) == 0) {
      ts.emplace_back(n, f.get(n));
      continue;
    }
    const size_t dot = n.find('.', std::string("optimizer.state.").size());
    const std::string param = position.at(std::stoul(n.substr(16, dot - 16))), key = n.substr(dot + 1);
    if (key == "step") adam_step = std::to_string(static_cast<int64_t>(f.get(n).item()));
    else if (key == "momentum_buffer") ts.emplace_back("muon.momentum_buffer." + param, f.get(n));
    else ts.emplace_back("adam." + key + "." + param, f.get(n));
  }
  auto md = f.metadata();
  md.erase("optimizer.param_groups");
  md.erase("elapsed_ns");
  md["adam_step"] = adam_step;
  seal_metadata(md);
  save_safetensors(state.string(), ts, md);
}
}  // namespace

// The old layout's reader gives the optimizer exactly the state the state dict held: a run cut
// and saved, its train state rewritten in the old layout, resumes to the bits of the run that
// never stopped (AdamW with nanoGPT's cosine, and the speedrun's Muon, AdamW and WSD).
TEST(Resume, ATrainStateInTheOldLayoutResumesBitIdentical) {
  const fs::path d = temp_dir("resume_old_layout");
  std::ostringstream log;
  for (const bool muon : {false, true}) {
    SCOPED_TRACE(muon ? "muon" : "adamw");
    auto config = [&](const std::string& name) {
      TrainConfig c = small_run(d, name + (muon ? "_muon" : "_adamw"));
      c.iters = 120;
      c.eval_every = 50;
      if (muon) {
        c.model.name = "modern";
        c.optimizer = OptimizerChoice("muon");
        c.schedule = ScheduleChoice("wsd");
        setting(c, "embed-lr") = 0.05;
      }
      return c;
    };
    const TrainConfig straight = config("straight");
    train_lm(straight, log);
    TrainConfig cut = config("cut");
    const RunHooks hooks = interrupt_after(70);  // past the warmup, and for wsd in its decay
    EXPECT_TRUE(train_lm(cut, log, hooks).interrupted);
    rewrite_in_the_old_layout(fs::path(cut.out_dir) / "train_state.safetensors");
    EXPECT_FALSE(resume_lm(cut.out_dir, "", 0, false, log).interrupted);
    EXPECT_EQ(read_bytes(fs::path(cut.out_dir) / "model.safetensors"), read_bytes(fs::path(straight.out_dir) / "model.safetensors"));
    EXPECT_EQ(losses(cut.out_dir), losses(straight.out_dir));
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
    c.optimizer = OptimizerChoice("muon");
    c.schedule = ScheduleChoice("wsd");
    setting(c, "embed-lr") = 0.05;   // the token embedding in an AdamW group of its own
    c.eval_iters = kEvalWholeSplit;  // and the whole-split evaluation, deterministic
    return c;
  };
  const TrainConfig straight = modern("straight");
  train_lm(straight, log);
  for (int64_t k : {57, 100, 250})  // in the stable phase, at an evaluation, in the decay
    expect_cut_run_resumes_exactly(modern("cut" + std::to_string(k)), k, straight.out_dir, log);
  // The train state holds the optimizer's state dict and names no optimizer: Muon's buffers and
  // AdamW's moments by position, each group's options under torch's names.
  const SafeTensorsFile st = SafeTensorsFile::load((fs::path(straight.out_dir) / "train_state.safetensors").string());
  std::set<std::string> keys;
  for (const auto& n : st.names())
    if (n.rfind("model.", 0) != 0) keys.insert(n.substr(n.rfind('.') + 1));
  EXPECT_EQ(keys, (std::set<std::string>{"step", "exp_avg", "exp_avg_sq", "momentum_buffer"}));
  const auto groups = nlohmann::json::parse(st.metadata().at("optimizer.param_groups"));
  ASSERT_EQ(groups.size(), 3u);  // AdamW: decayed (the head; the modern model has no gains or biases), the embedding; Muon
  EXPECT_EQ(groups[1]["initial_lr"], 0.05);
  EXPECT_EQ(groups[2]["momentum"], 0.95);
  EXPECT_FALSE(st.metadata().count("adam_step"));
}

// modded-nanogpt's model parts resume exactly too: the value tables in the embedding's AdamW
// group, the scalars (value_lambdas, skip_weights, the x0 lambdas) in the undecayed one, with
// Muon and WSD.
TEST(Resume, ModernModelWithItsModelPartsResumesBitIdentical) {
  const fs::path d = temp_dir("resume_model_parts");
  std::ostringstream log;
  auto parts = [&](const std::string& name) {
    TrainConfig c = small_run(d, name);
    c.model.name = "modern";
    c.model.n_layer = 2;  // a value table in layers 0 and 1, block 1 getting block 0's output
    c.model.value_embeds = 1;
    c.model.unet_skips = true;
    c.model.x0_residual = true;
    c.optimizer = OptimizerChoice("muon");
    c.schedule = ScheduleChoice("wsd");
    setting(c, "embed-lr") = 0.05;
    return c;
  };
  const TrainConfig straight = parts("straight");
  train_lm(straight, log);
  TrainConfig cut = parts("cut");
  const RunHooks hooks = interrupt_after(130);  // in the decay
  EXPECT_TRUE(train_lm(cut, log, hooks).interrupted);
  EXPECT_FALSE(resume_lm(cut.out_dir, "", 0, false, log).interrupted);
  EXPECT_EQ(read_bytes(fs::path(cut.out_dir) / "model.safetensors"), read_bytes(fs::path(straight.out_dir) / "model.safetensors"));
  EXPECT_EQ(losses(cut.out_dir), losses(straight.out_dir));
  const SafeTensorsFile st = SafeTensorsFile::load((fs::path(straight.out_dir) / "train_state.safetensors").string());
  const auto groups = nlohmann::json::parse(st.metadata().at("optimizer.param_groups"));
  ASSERT_EQ(groups.size(), 4u);  // AdamW: the head; the scalars; the three tables at --embed-lr; Muon
  EXPECT_EQ(groups[1]["weight_decay"], 0.0);
  EXPECT_EQ(groups[1]["params"].size(), 6u);  // value_lambdas, skip_weights, two layers' x_lambda, x0_lambda
  EXPECT_EQ(groups[2]["initial_lr"], 0.05);
  EXPECT_EQ(groups[2]["params"].size(), 2u);  // tok_emb, value_embeds.0
}

namespace {
// A small run under a time budget of `seconds` on a fake clock, with only the final evaluation:
// step `it` takes 40 + (it mod 7) ms of it, and nothing else does (the evaluation's timing reads
// 0 s), so the run's decisions are the same on any machine.
TrainConfig budget_run(const fs::path& d, const std::string& name, double seconds) {
  TrainConfig c = small_run(d, name);
  c.schedule = ScheduleChoice("wsd");
  c.time_budget = seconds;
  c.iters = 1000000;  // a cap the budget stays below
  c.eval_every = 1000000;
  return c;
}

struct FakeClock {
  int64_t ns = 1'000'000'000;
  double slower = 1;  // a factor on every step's time
  RunHooks hooks() {
    RunHooks h;
    h.clock = [this] { return ns; };
    h.after_step = [this](int64_t it) {
      ns += static_cast<int64_t>(slower * static_cast<double>((40 + it % 7) * 1'000'000));
    };
    return h;
  }
};

// (iter, lr) of every step's metrics line.
std::vector<std::string> lrs(const fs::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) {
    const auto j = nlohmann::json::parse(l);
    if (j["val_loss"].is_null()) out.push_back(j["iter"].dump() + " " + j["lr"].dump());
  }
  return out;
}
}  // namespace

// Under --time-budget the step count is planned again after every step and the schedule's decay
// follows it; on the fake clock the run ends, its steps and final evaluation included, within
// 98% and 100.5% of its budget, and says what it planned.
TEST(TimeBudget, TheRunEndsWithinItsBudget) {
  const fs::path d = temp_dir("budget_window");
  std::ostringstream log;
  FakeClock clock;
  const TrainSummary s = train_lm(budget_run(d, "run", 10), log, clock.hooks());
  EXPECT_GE(s.seconds, 0.98 * 10) << log.str();
  EXPECT_LE(s.seconds, 1.005 * 10) << log.str();
  EXPECT_GT(s.iters, 200);  // about 10 s of 43 ms steps
  EXPECT_NE(log.str().find("time budget 10s: "), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("planned again after every step"), std::string::npos) << log.str();
  // The decay followed the plan: the last steps ran below the peak, the last one lowest.
  const auto steps = lrs(fs::path(d / "run"));
  ASSERT_GE(steps.size(), 2u);
  EXPECT_LT(std::stod(steps.back().substr(steps.back().find(' '))), std::stod(steps[30].substr(steps[30].find(' '))));
}

// Every decision the budget made from the clock is in the train state: a run cut after any step
// (before the evaluation's timing, in the stable phase, in the decay) and resumed on a clock
// that reads the same ends at the bits of the run that never stopped.
TEST(Resume, ATimeBudgetedRunResumesBitIdentical) {
  const fs::path d = temp_dir("resume_budget");
  std::ostringstream log;
  FakeClock straight_clock;
  const TrainConfig straight = budget_run(d, "straight", 10);
  const TrainSummary want = train_lm(straight, log, straight_clock.hooks());
  const std::string want_model = read_bytes(fs::path(straight.out_dir) / "model.safetensors");
  for (int64_t k : {0, 100, 200}) {
    SCOPED_TRACE("interrupted after iter " + std::to_string(k));
    const TrainConfig c = budget_run(d, "cut" + std::to_string(k), 10);
    FakeClock first, second;
    EXPECT_TRUE(train_lm(c, log, interrupt_after(k, first.hooks())).interrupted);
    // The state holds the plan, the estimates and the clock, exactly.
    const LoadedTrainState saved = read_train_state((fs::path(c.out_dir) / "train_state.safetensors").string());
    ASSERT_TRUE(saved.pos.budget.has_value());
    EXPECT_EQ(saved.pos.elapsed_ns, first.ns - 1'000'000'000);
    EXPECT_EQ(saved.config.iters, saved.pos.budget->planned);
    second.ns = 7'000'000'000;  // another process's clock: only the differences count
    const TrainSummary got = resume_lm(c.out_dir, TrainConfig{}, {}, log, second.hooks());
    EXPECT_EQ(got.iters, want.iters);
    EXPECT_EQ(read_bytes(fs::path(c.out_dir) / "model.safetensors"), want_model);
    EXPECT_EQ(losses(c.out_dir), losses(straight.out_dir));
    EXPECT_EQ(lrs(c.out_dir), lrs(straight.out_dir));
  }
}

// A resumed run replays what was decided before it stopped: the step right after the cut runs at
// the rate the recorded plan gave it, whatever the new process's clock says; the plans after it
// follow the new clock (here three times slower: fewer steps in all).
TEST(Resume, ATimeBudgetedRunReplaysItsRecordedPlan) {
  const fs::path d = temp_dir("resume_budget_replay");
  std::ostringstream log;
  FakeClock straight_clock;
  const TrainConfig straight = budget_run(d, "straight", 10);
  const TrainSummary want = train_lm(straight, log, straight_clock.hooks());
  const TrainConfig c = budget_run(d, "cut", 10);
  FakeClock first, slow;
  EXPECT_TRUE(train_lm(c, log, interrupt_after(40, first.hooks())).interrupted);
  slow.slower = 3;
  const TrainSummary got = resume_lm(c.out_dir, TrainConfig{}, {}, log, slow.hooks());
  const auto want_lrs = lrs(straight.out_dir), got_lrs = lrs(c.out_dir);
  ASSERT_GT(got_lrs.size(), 42u);
  for (size_t i = 0; i <= 41; ++i) EXPECT_EQ(got_lrs[i], want_lrs[i]) << i;  // iter 42: the first step resumed
  EXPECT_LT(got.iters, want.iters);
  EXPECT_GE(got.seconds, 0.98 * 10);
  EXPECT_LE(got.seconds, 1.005 * 10);
}
