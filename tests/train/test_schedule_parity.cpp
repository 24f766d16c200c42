// The speedrun's schedules against its PyTorch twin (bench/torch_speedrun.py), in float64, from
// the fixture tests/parity/make_schedule_fixtures.py wrote (no torch needed): Muon's momentum
// warmup, the sequence-length warmup and the batch warmup at once, with WSD and weight decay, on
// the modern model. Every step's shape and momentum are the twin's, and eight steps through the run's own
// parts (the muon row's optimizer and its before_step, step_shape, the WSD factor in LambdaLR,
// train::Step) give the twin's losses and weights.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "autograd/safetensors.h"
#include "models/registry.h"
#include "optim/combined.h"
#include "optim/lr_scheduler.h"
#include "optim/muon.h"
#include "train/config/run_config.h"
#include "train/schedules/registry.h"
#include "train/step.h"
#include "train/step_shape.h"

using namespace ag;
using namespace ag::train;

namespace {
namespace fs = std::filesystem;
const fs::path kFixture = fs::path(ATTOGRAD_SOURCE_DIR) / "tests/parity/fixtures/schedules/schedules.safetensors";

// The fixture's recipe (make_schedule_fixtures.py's RECIPE) as attograd's flags set it.
TrainConfig recipe() {
  TrainConfig c;
  c.model.name = "modern";
  c.model.n_layer = 2, c.model.n_head = 2, c.model.n_embd = 16, c.model.block_size = 32, c.model.softcap = 3.0;
  c.model.vocab_size = 23;
  c.batch_size = 4;
  c.iters = 8;
  c.optimizer = OptimizerChoice("muon");
  c.schedule = ScheduleChoice("wsd");
  c.warmup = 0, c.min_lr = 0.0, c.lr = 0.008, c.beta1 = 0.8, c.beta2 = 0.95, c.grad_clip = 1.0;
  c.weight_decay = 0.1;  // the matrices, the embedding and the head, each at its group's rate
  setting(c, "cooldown") = 0.5;
  setting(c, "muon-lr") = 0.05;
  setting(c, "embed-lr") = 0.3;
  setting(c, "muon-momentum-warmup") = 5;  // from 0.85 (--muon-momentum-start) to 0.95 (--muon-momentum)
  c.block_warmup = 6, c.block_start = 8;
  c.batch_warmup = 4, c.batch_start = 2;
  return c;
}

double muon_momentum(optim::Optimizer& opt) {
  auto& muon = dynamic_cast<optim::Muon&>(dynamic_cast<optim::CombinedOptimizer&>(opt).part(1));
  return muon.param_groups().at(0).options.momentum;
}

void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto a = got.to_double_vector(), b = want.to_double_vector();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol * (1 + std::fabs(b[i]))) << what << " at " << i;
}
}  // namespace

TEST(ScheduleParity, TheWarmupsTrainAsTheTwinsDo) {
  const SafeTensorsFile f = SafeTensorsFile::load(kFixture.string());
  const TrainConfig cfg = recipe();
  ASSERT_EQ(f.metadata().at("iters"), std::to_string(cfg.iters));
  Generator gen(0);
  auto model = models::find_model("modern").make(cfg.model, DType::Float64, gen);
  std::map<std::string, Tensor> weights;
  for (const auto& [name, p] : model->named_parameters()) weights[name] = f.get("param." + name);
  model->load_state_dict(weights);
  model->train();
  const std::unique_ptr<optim::Optimizer> opt = cfg.optimizer->build(*model, cfg);
  optim::lr_scheduler::LambdaLR sched(*opt, [&](int64_t it) { return schedule_factor(cfg, it, cfg.iters); });
  Step step(*model, *opt, distributed::Comm::single(), StepOptions{1, cfg.grad_clip, false, Precision::FP32});

  const std::vector<double> stream = f.get("stream").to_double_vector(), starts = f.get("starts").to_double_vector(),
                            batch = f.get("batch").to_double_vector(), block = f.get("block").to_double_vector(),
                            momentum = f.get("momentum").to_double_vector(), loss = f.get("loss").to_double_vector();
  for (int64_t it = 0; it < cfg.iters; ++it) {
    SCOPED_TRACE("step " + std::to_string(it));
    const StepShape shape = step_shape(cfg, it, 1);
    EXPECT_EQ(shape.batch, static_cast<int64_t>(batch[static_cast<size_t>(it)]));
    EXPECT_EQ(shape.block, static_cast<int64_t>(block[static_cast<size_t>(it)]));
    cfg.optimizer->before_step(*opt, cfg, it);
    EXPECT_NEAR(muon_momentum(*opt), momentum[static_cast<size_t>(it)], 1e-15);
    // The twin's windows: row r of step it starts at starts[it, r].
    std::vector<int64_t> x, y;
    for (int64_t r = 0; r < shape.batch; ++r) {
      const auto s = static_cast<size_t>(starts[static_cast<size_t>(it * cfg.batch_size + r)]);
      for (int64_t t = 0; t < shape.block; ++t) {
        x.push_back(static_cast<int64_t>(stream[s + static_cast<size_t>(t)]));
        y.push_back(static_cast<int64_t>(stream[s + static_cast<size_t>(t) + 1]));
      }
    }
    const StepResult r = step.run(Tensor::from_vector(x, {shape.batch, shape.block}),
                                  Tensor::from_vector(y, {shape.batch, shape.block}), it);
    ASSERT_TRUE(r.nonfinite.empty()) << r.nonfinite;
    EXPECT_NEAR(r.loss, loss[static_cast<size_t>(it)], 1e-11);
    sched.step();
  }
  for (const auto& [name, p] : model->named_parameters()) expect_near(p, f.get("after." + name), 1e-10, "after " + name);
}
