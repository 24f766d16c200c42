// One training run, new or resumed (inside the training library: train/trainer.h is the
// interface). It owns everything an exact resume must restore (model, optimizer, generators,
// position), runs the loop (train/run.cpp) and emits its events to the loggers it was given
// (train/logging/run_logger.h). train_lm and resume_lm (train/trainer.cpp) build it.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/safetensors.h"
#include "data/corpus.h"
#include "models/registry.h"
#include "distributed/comm.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "train/gemm_choice.h"
#include "train/logging/grad_report.h"
#include "train/logging/profile.h"
#include "train/logging/run_logger.h"
#include "train/run_folder/train_state.h"
#include "train/step.h"
#include "train/time_budget.h"
#include "train/trainer.h"

namespace ag::train {

class Run {
 public:
  // loggers: empty on ranks other than 0. The model is built from entry, seeded by cfg.seed, and
  // its optimizer by cfg.optimizer's row. started_ns: when the run began (before its data was
  // read), on the run's clock (hooks.clock).
  Run(const TrainConfig& cfg, const models::ModelEntry& entry, data::Corpus corpus, distributed::Comm& comm,
      std::vector<std::shared_ptr<RunLogger>> loggers, const RunHooks& hooks, int64_t started_ns);

  // --init-from: the weights of a trained model of the same configuration (fine-tuning).
  void init_weights_from(const models::LanguageModel& trained);
  // The state file's bytes are the same on every rank (rank 0 read and broadcast them).
  void resume_from(const SafeTensorsFile& state, const RunPosition& pos);
  // A new run's identity (train/run_folder/run_identity.h), saved with each train state.
  void set_run_id(std::string id) { pos_.run_id = std::move(id); }

  // The loop: at each evaluation point evaluate and checkpoint; otherwise step.
  TrainSummary run(bool resumed);

 private:
  void start(bool resumed);
  bool evaluate_and_checkpoint(int64_t it);           // false: interrupted (redone on resume)
  double train_step(int64_t it);                      // one update (or a skipped one); returns the loss
  void end_step(int64_t it, double loss, double lr);  // the StepEnd event and the throughput window
  void plan_budget(int64_t steps_done);               // --time-budget: the step count planned again
  double seconds_since(int64_t t_ns) const { return static_cast<double>(now_ns_() - t_ns) * 1e-9; }
  void checkpoint(bool best);
  TrainSummary stop_interrupted();                      // after a SIGINT/SIGTERM: checkpoint, say how to resume
  TrainSummary finish();                                // the last line and the sample
  void note_kill_timeout(double step_s);                // under mpirun: a step longer than its SIGKILL timer
  void decorrelate_dropout();
  void note_profile(void (ProfileSession::*report)(std::ostream&));  // end_step or finish
  std::string sample_text(int64_t tokens);              // from a newline, temperature 0.8, its own generator
  template <class F>
  void emit(F&& f) {
    for (const auto& l : loggers_) f(*l);
  }

  distributed::Comm& comm_;
  TrainConfig cfg_;
  data::Corpus corpus_;
  std::vector<std::shared_ptr<RunLogger>> loggers_;
  RunHooks hooks_;
  RunGemm gemm_;  // the run's GEMM provider, chosen before anything else (train/gemm_choice.h)
  Generator model_gen_, batch_gen_, eval_gen_;  // init + dropout, training batches, evaluation batches
  std::unique_ptr<models::LanguageModel> model_;
  std::unique_ptr<optim::Optimizer> opt_;
  std::optional<Step> step_;
  // Each group's initial_lr times cfg_.schedule's factor for cfg_.iters steps (which a time
  // budget plans as it goes); made by start(), at the step the run starts from.
  std::optional<optim::lr_scheduler::LambdaLR> sched_;
  RunPosition pos_;
  std::function<int64_t()> now_ns_;
  int64_t t_start_ns_ = 0;  // the run's start on now_ns_, moved back by the time of earlier segments
  tuning::PeakFlops peak_;
  double flops_per_token_ = 0;  // of a training step
  TrainSummary summary_;
  // The throughput window: the steps since the last logged step (evaluations excluded).
  int64_t t_log_ns_ = 0;
  int64_t steps_since_log_ = 0;
  double tokens_since_log_ = 0;  // those steps' tokens (each step's own shape, train/step_shape.h)
  double tokens_per_s_ = 0;  // of the last logged step
  double grad_norm_ = 0;     // of the last step, before clipping
  std::string skipped_;      // why the last step's update was skipped, if it was
  bool stop_agreed_ = false;  // several ranks: some rank was asked to stop (agreed in the step)
  int64_t steps_timed_ = 0;   // by note_kill_timeout (the first step, slower, is not judged)
  bool kill_timeout_noted_ = false;
  // --time-budget: the policy (train/time_budget.h), and when the last step (or evaluation) ended.
  std::optional<TimeBudget> budget_;
  int64_t step_mark_ns_ = 0;
  // The gradient report taken after the backward of the step before an evaluation.
  std::optional<GradReportFile> grad_report_;
  int64_t grad_report_iter_ = -1;  // the evaluation it is for
  // Under mpirun: a collective that waits for a lost peer ends the job (exit status 75)
  // instead of hanging, and the message says where (distributed/comm.h).
  distributed::CommTimeout comm_timeout_{comm_, cfg_.comm_timeout, [this] {
    return "at iter " + std::to_string(pos_.iter) + "; the last checkpoint in " + cfg_.out_dir +
           " is intact (attograd train --resume " + cfg_.out_dir + ")";
  }};
  // --profile-steps: rank 0 records the steps after the first; the table goes out as a note.
  ProfileSession profile_{comm_.is_root() ? cfg_.profile_steps : 0, cfg_.out_dir, "attograd train"};
};

}  // namespace ag::train
