// The training loop (train/run.h's Run). Setting a run up (new, resumed, fine-tuned) is
// train/trainer.cpp; one step is train/step.cpp; what is printed and written are the
// loggers' (train/logging/run_logger.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "autograd/parallel.h"
#include "autograd/profiler.h"
#include "data/batch.h"
#include "train/config/config_error.h"
#include "train/evaluate.h"
#include "train/flops.h"
#include "train/interrupt.h"
#include "train/rank_fingerprint.h"
#include "train/run.h"
#include "train/schedules/registry.h"
#include "train/step_shape.h"

namespace ag::train {

namespace {
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Run::Run(const TrainConfig& cfg, const models::ModelEntry& entry, data::Corpus corpus, distributed::Comm& comm,
         std::vector<std::shared_ptr<RunLogger>> loggers, const RunHooks& hooks, int64_t started_ns)
    : comm_(comm),
      cfg_(cfg),
      corpus_(std::move(corpus)),
      loggers_(std::move(loggers)),
      hooks_(hooks),
      gemm_(cfg, entry.parameters(cfg.model), comm),  // before any GEMM (train/gemm_choice.h)
      model_gen_(cfg.seed, cfg.generator),
      batch_gen_(cfg.seed + 1, cfg.generator),
      eval_gen_(cfg.seed + 2, cfg.generator),
      model_(entry.make(cfg.model, DType::Float32, model_gen_)),
      opt_(cfg.optimizer->build(*model_, cfg)),
      now_ns_(hooks.clock ? hooks.clock : std::function<int64_t()>(steady_ns)),
      t_start_ns_(started_ns) {
  cfg_.gemm = gemm_choice_of(gemm_.decision().provider);  // the run records the provider auto chose
  cfg_.gemm_bf16 = gemm_bf16_choice_of(gemm_.decision().bf16_api);  // and the bf16 interface
  model_->train();
  // Every rank built the same model from the same seed; rank 0's copy is the one.
  if (comm_.distributed())
    for (auto& [name, p] : model_->named_parameters()) comm_.broadcast(p);
  step_.emplace(*model_, *opt_, comm_, StepOptions{cfg.grad_accum, cfg.grad_clip, cfg.detect_anomaly, cfg.precision});
  step_->after_backward = [this](double loss) {
    if (hooks_.after_backward) hooks_.after_backward(*model_);
    // --grad-report: the gradients of the step before each evaluation, before clipping.
    const int64_t it = pos_.iter;
    if (cfg_.grad_report && !loggers_.empty() && ((it + 1) % cfg_.eval_every == 0 || it + 1 == cfg_.iters)) {
      grad_report_ = grad_report_file(model_->named_parameters(), it, loss);
      grad_report_iter_ = it + 1;
    }
  };
  decorrelate_dropout();
}

void Run::init_weights_from(const models::LanguageModel& trained) {
  std::map<std::string, Tensor> weights;
  for (const auto& [name, p] : trained.named_parameters()) weights[name] = p.detach();
  model_->load_state_dict(weights);
}

void Run::resume_from(const SafeTensorsFile& state, const RunPosition& pos) {
  restore_train_state(state, *model_, *opt_);
  pos_ = pos;
  model_gen_.set_state(pos.rng_model);
  batch_gen_.set_state(pos.rng_batch);
  eval_gen_.set_state(pos.rng_eval);
  decorrelate_dropout();
  // The clock and the last evaluation carry on from where the run stopped.
  t_start_ns_ -= pos.elapsed_ns;
  summary_.train_loss = pos.last_train_loss;
  summary_.val_loss = pos.last_val_loss;
}

// Dropout draws from model_gen_. Ranks must not share masks, so ranks other than 0 move to
// a stream of their own, derived from rank 0's (what a checkpoint saves) and the rank.
void Run::decorrelate_dropout() {
  if (comm_.rank() == 0) return;
  // (st[0]: an attograd stream's first word; a torch stream's seed, which its state starts with.)
  Generator::State st = model_gen_.state();
  model_gen_.manual_seed(st[0] ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(comm_.rank())));
}

void Run::start(bool resumed) {
  // MFU's denominator: this machine's kept peak for the threads of this rank; ranks that share
  // a machine share its cores, as they do while training, and the job's peak is the sum.
  peak_ = tuning::kept_peak_flops(parallel::num_threads(), cfg_.precision);
  if (comm_.distributed()) comm_.allreduce_sum(&peak_.gflops, 1);
  flops_per_token_ = train_flops_per_token(*model_, cfg_.batch_size);
  const distributed::Reducer* r = step_->reducer();
  const RunStart e{cfg_,
                   corpus_,
                   *model_,
                   pos_.iter,
                   resumed,
                   comm_.size(),
                   r ? static_cast<int64_t>(r->buckets().size()) : 0,
                   r ? r->bytes_per_step() : 0,
                   peak_,
                   gemm_header(gemm_.decision()),
                   precision_header(cfg_.precision, gemm_.decision().provider)};
  // The schedule from the step the run starts at: a resumed optimizer holds each group's
  // initial_lr, from which LambdaLR sets that step's rates (torch's last_epoch).
  sched_.emplace(*opt_, [this](int64_t it) { return schedule_factor(cfg_, it, cfg_.iters); }, pos_.iter - 1);
  // --time-budget: the policy, new or as recorded. A train state written before it recorded
  // its decisions has none: the step count it fixed is kept, as then.
  if (cfg_.time_budget > 0 && (!resumed || pos_.budget)) {
    // Under a batch or sequence-length warmup the early steps are smaller: the policy knows each
    // step's share of a full step's tokens.
    StepShares shares{full_shape_from(cfg_), [this](int64_t it) { return step_share(cfg_, it, comm_.size()); }};
    budget_.emplace(cfg_.time_budget, pos_.budget ? *pos_.budget : BudgetState{cfg_.iters, cfg_.iters}, std::move(shares));
    pos_.budget = budget_->state();
  }
  emit([&](RunLogger& l) { l.on_start(e); });
  t_log_ns_ = step_mark_ns_ = now_ns_();
}

TrainSummary Run::run(bool resumed) {
  InterruptGuard interrupts;  // first: a signal during start() must not kill a half-written file
  start(resumed);
  for (int64_t& it = pos_.iter;; ++it) {
    // A time budget is spent on training: no evaluation of the untrained model.
    const bool skip_first_eval = it == 0 && cfg_.time_budget > 0;
    if ((it % cfg_.eval_every == 0 || it == cfg_.iters) && !pos_.eval_done && !skip_first_eval) {
      if (!evaluate_and_checkpoint(it)) return stop_interrupted();
      step_mark_ns_ = now_ns_();  // an evaluation is not a step's time
    }
    if (it == cfg_.iters) break;
    profile_.begin_step(it);
    const double loss = train_step(it);
    note_profile(&ProfileSession::end_step);
    if (budget_) plan_budget(it + 1);  // before the step's event, which shows the count
    end_step(it, loss, opt_->get_lr(0));
    sched_->step();  // the next step's rates, for the run's count as it stands now
    if (cfg_.sample_every > 0 && (it + 1) % cfg_.sample_every == 0 && it + 1 != cfg_.iters && !loggers_.empty()) {
      const Sample s{it + 1, sample_text(100)};
      emit([&](RunLogger& l) { l.on_sample(s); });
    }
    // One process stops when a signal arrived during the step; several ranks when any rank had
    // one by the time of the step's agreement (all of them then stop after the same step).
    if (comm_.distributed() ? stop_agreed_ : InterruptGuard::requested()) {
      ++it;  // this step is complete: the run continues at the next one
      return stop_interrupted();
    }
  }
  return finish();
}

// --time-budget (train/time_budget.h): after each step the policy plans the step count again
// from the steps timed so far (the run's first step, a warm-up, is not timed) and its timing of
// the final evaluation, taken once. The schedule's factor follows the count (train/schedules/),
// and every plan is recorded with the run's state, so a resumed run continues from it.
void Run::plan_budget(int64_t steps_done) {
  const int64_t now = now_ns_();
  const double step_s = steps_done > 1 ? static_cast<double>(now - step_mark_ns_) * 1e-9 : -1.0;
  int64_t planned = budget_->after_step(steps_done, static_cast<double>(now - t_start_ns_) * 1e-9, step_s);
  const bool first_eval_timing = budget_->wants_eval_time();
  if (first_eval_timing) {
    // Each rank evaluates its share of the batches, at the run's precision as it will then.
    const AutocastGuard precision(cfg_.precision);
    budget_->set_eval_time(final_eval_seconds(*model_, cfg_, corpus_.val_ids, now_ns_) / static_cast<double>(comm_.size()));
    planned = budget_->after_step(steps_done, seconds_since(t_start_ns_), -1.0);
  }
  // Each rank's count, averaged: every rank plans the same one.
  if (comm_.distributed()) {
    double mean = static_cast<double>(planned);
    comm_.allreduce_sum(&mean, 1);
    planned = std::max(steps_done, static_cast<int64_t>(std::floor(mean / static_cast<double>(comm_.size()))));
    budget_->agree(planned);
  }
  cfg_.iters = planned;
  pos_.budget = budget_->state();
  if (first_eval_timing) {
    char msg[240];
    std::snprintf(msg, sizeof msg,
                  "time budget %gs: %ld steps at %.1f ms a step, planned again after every step; %.1f s for the final "
                  "evaluation",
                  cfg_.time_budget, static_cast<long>(planned), 1e3 * budget_->state().step_s, budget_->eval_estimate());
    emit([&](RunLogger& l) { l.on_note(msg); });
  }
  step_mark_ns_ = now_ns_();
}

bool Run::evaluate_and_checkpoint(int64_t it) {
  check_same_weights(comm_, model_->named_parameters(), it);
  const Generator::State eval_start = eval_gen_.state();
  // --eval-iters all: the whole validation split; the training loss, a guide only, from
  // kTrainBatchesWithWholeSplit random batches.
  const bool whole = cfg_.eval_iters == kEvalWholeSplit;
  const AutocastGuard precision(cfg_.precision);  // evaluated as it trains
  const int64_t train_batches = whole ? kTrainBatchesWithWholeSplit : cfg_.eval_iters;
  const auto tl = estimate_loss(*model_, corpus_.train_ids, cfg_.batch_size, train_batches, eval_gen_, comm_);
  std::optional<double> vl;
  if (tl)
    vl = whole ? split_loss(*model_, corpus_.val_ids, kSplitRows, comm_)
               : estimate_loss(*model_, corpus_.val_ids, cfg_.batch_size, cfg_.eval_iters, eval_gen_, comm_);
  if (!vl) {
    eval_gen_.set_state(eval_start);  // the checkpoint then resumes into this same evaluation
    return false;
  }
  // A model that evaluates to NaN or Inf is not saved over the last good checkpoint.
  if (!std::isfinite(*tl) || !std::isfinite(*vl)) {
    char msg[160];
    std::snprintf(msg, sizeof msg, "non-finite evaluation at iter %ld: train loss %g, val loss %g", static_cast<long>(it),
                  *tl, *vl);
    throw NonFiniteError(std::string(msg) + "; the model is not saved. The last good checkpoint in " + cfg_.out_dir +
                         " is kept (a lower --lr may help)");
  }
  summary_.train_loss = pos_.last_train_loss = *tl;
  summary_.val_loss = pos_.last_val_loss = *vl;
  const bool best = *vl < pos_.best_val_loss;
  if (best) pos_.best_val_loss = *vl;
  pos_.eval_done = true;
  // The metrics line before the checkpoint: a checkpoint never gets ahead of metrics.jsonl.
  const GradReportFile* report = grad_report_iter_ == it ? &*grad_report_ : nullptr;
  model_->eval();
  const EvalEnd e{it, *tl, *vl, opt_->get_lr(0), seconds_since(t_start_ns_), *model_, report};
  emit([&](RunLogger& l) { l.on_eval(e); });
  model_->train();
  grad_report_.reset();
  grad_report_iter_ = -1;
  checkpoint(best);
  t_log_ns_ = now_ns_();  // evaluation time is not training throughput
  steps_since_log_ = 0;
  tokens_since_log_ = 0;
  return true;
}

void Run::checkpoint(bool best) {
  pos_.rng_model = model_gen_.state();
  pos_.rng_batch = batch_gen_.state();
  pos_.rng_eval = eval_gen_.state();
  pos_.elapsed_ns = now_ns_() - t_start_ns_;
  const Checkpoint e{pos_.iter, best, cfg_, *model_, *opt_, pos_, corpus_.tokenizer};
  emit([&](RunLogger& l) { l.on_checkpoint(e); });
}

double Run::train_step(int64_t it) {
  const int64_t t0 = now_ns_();
  std::optional<profiler::RecordScope> data_phase(std::in_place, "data", profiler::Category::Phase);
  // The step's shape: (batch, block), or smaller under a warmup (train/step_shape.h).
  const StepShape shape = step_shape(cfg_, it, comm_.size());
  auto [x, y] = data::get_batch(corpus_.train_ids, shape.batch, shape.block, batch_gen_);
  data_phase.reset();
  // The options a schedule moves besides the rates (Muon's momentum warmup), for this step.
  if (cfg_.optimizer->before_step) cfg_.optimizer->before_step(*opt_, cfg_, it);
  const StepResult r = step_->run(x, y, it);
  stop_agreed_ = r.stop;
  grad_norm_ = r.grad_norm;
  skipped_.clear();
  if (!r.nonfinite.empty()) {
    if (!cfg_.skip_nonfinite)
      throw NonFiniteError(r.nonfinite + "; stopped without updating. The last good checkpoint in " + cfg_.out_dir +
                           " is kept (use --skip-nonfinite to skip such steps)");
    ++pos_.skipped_updates;
    skipped_ = r.nonfinite;
  }
  pos_.eval_done = false;
  ++steps_since_log_;
  tokens_since_log_ += static_cast<double>(shape.tokens());
  if (hooks_.after_step) hooks_.after_step(it);
  if (comm_.distributed()) note_kill_timeout(seconds_since(t0));
  return r.loss;
}

// The throughput since the last logged step (so that the progress bar shows it from the first
// step on); at a logged step, what the log line and metrics.jsonl show.
void Run::end_step(int64_t it, double loss, double lr) {
  StepEnd e;
  e.iter = it + 1;
  e.iters = cfg_.iters;
  e.loss = loss;
  e.lr = lr;
  e.grad_norm = grad_norm_;
  e.logged = (it + 1) % cfg_.log_every == 0 || it + 1 == cfg_.iters;
  // The steps' own tokens: under a warmup the early steps are smaller.
  const double dt = seconds_since(t_log_ns_);
  e.tokens_per_s = dt > 0 ? tokens_since_log_ / dt : tokens_per_s_;
  e.ms_per_step = steps_since_log_ > 0 ? 1e3 * dt / static_cast<double>(steps_since_log_) : 0;
  e.mfu = mfu(flops_per_token_, e.tokens_per_s, peak_.gflops);
  e.eta_s = e.tokens_per_s > 0 ? tokens_of_steps(cfg_, it + 1, cfg_.iters, comm_.size()) / e.tokens_per_s : 0;
  e.elapsed_s = seconds_since(t_start_ns_);
  e.skipped = skipped_;
  e.skipped_updates = pos_.skipped_updates;
  emit([&](RunLogger& l) { l.on_step(e); });
  if (e.logged) {
    tokens_per_s_ = e.tokens_per_s;
    t_log_ns_ = now_ns_();
    steps_since_log_ = 0;
    tokens_since_log_ = 0;
  }
}

// After a Ctrl-C or SIGTERM to mpirun the ranks have mpirun's kill timeout to finish their step
// and checkpoint. When a step alone takes longer, such a stop would be a SIGKILL that loses the
// steps since the last checkpoint: rank 0 says so once, and what to do.
void Run::note_kill_timeout(double step_s) {
  const double limit = comm_.mpirun_kill_timeout_seconds();
  if (kill_timeout_noted_ || limit <= 0 || ++steps_timed_ < 2 || step_s < limit) return;
  kill_timeout_noted_ = true;
  char msg[512];
  std::snprintf(msg, sizeof msg,
                "note: a step takes %.1f s, longer than the %g s mpirun leaves the ranks between its SIGTERM and its "
                "SIGKILL after a Ctrl-C or SIGTERM to mpirun, so such a stop would lose the steps since the last "
                "checkpoint. Start mpirun with --mca odls_base_sigkill_timeout %.0f, or stop the job with SIGTERM "
                "to one rank (docs/distributed.md)",
                step_s, limit, std::ceil(3 * step_s + 5));
  emit([&](RunLogger& l) { l.on_note(msg); });
}

TrainSummary Run::stop_interrupted() {
  checkpoint(false);
  // With several ranks no rank may exit before all are done: the first rank to exit makes
  // mpirun kill the others, and at once when mpirun itself was signalled (its wait between
  // SIGTERM and SIGKILL ends when a child exits). So every rank has stopped after pos_.iter
  // and rank 0 has its checkpoint (barrier); rank 0 says so; then everyone may exit (barrier).
  comm_.barrier();
  Stop e;
  e.interrupted = true;
  e.signal = InterruptGuard::signal_number();  // 0: the signal reached another rank
  e.iter = pos_.iter;
  e.iters = cfg_.iters;
  e.ranks = comm_.size();
  e.dir = cfg_.out_dir;
  emit([&](RunLogger& l) { l.on_stop(e); });
  if (comm_.distributed()) {
    comm_.barrier();  // rank 0's line is out (in the pipe to mpirun) before any rank exits
    comm_.skip_finalize_at_exit();
  }
  summary_.interrupted = true;
  summary_.iters = pos_.iter;
  summary_.skipped_updates = pos_.skipped_updates;
  return summary_;
}

// The profile's table, when it has one to give, goes to the loggers as a note.
void Run::note_profile(void (ProfileSession::*report)(std::ostream&)) {
  if (cfg_.profile_steps == 0 || profile_.done()) return;  // off: no stream per step
  std::ostringstream table;
  (profile_.*report)(table);
  std::string text = table.str();
  if (text.empty()) return;
  if (text.back() == '\n') text.pop_back();
  emit([&](RunLogger& l) { l.on_note(text); });
}

TrainSummary Run::finish() {
  note_profile(&ProfileSession::finish);  // when the run ended before the last profiled step
  summary_.iters = cfg_.iters;
  summary_.seconds = seconds_since(t_start_ns_);
  summary_.tokens_per_s = tokens_per_s_;
  summary_.skipped_updates = pos_.skipped_updates;
  Stop e;
  e.iter = e.iters = cfg_.iters;
  e.ranks = comm_.size();
  e.seconds = summary_.seconds;
  e.val_loss = summary_.val_loss;
  e.skipped_updates = pos_.skipped_updates;
  e.dir = cfg_.out_dir;
  emit([&](RunLogger& l) { l.on_stop(e); });
  if (cfg_.sample_tokens > 0 && !loggers_.empty()) {  // someone to show it to
    Sample s{cfg_.iters, sample_text(cfg_.sample_tokens), /*final=*/true};
    if (InterruptGuard::requested()) {  // Ctrl-C ended the sample
      s.interrupted_by = InterruptGuard::signal_number();
      summary_.interrupted = true;
    }
    summary_.sample = s.text;
    emit([&](RunLogger& l) { l.on_sample(s); });
  }
  return summary_;
}

std::string Run::sample_text(int64_t tokens) {
  // A generator of its own, seeded alike each time: sampling never moves the run's streams.
  Generator sample_gen(cfg_.seed, cfg_.generator);
  const AutocastGuard precision(cfg_.precision);
  model_->eval();
  const int64_t nl = corpus_.tokenizer.id_of(U'\n');
  models::SampleOptions opt{tokens, 0.8, 0, true};
  opt.on_token = [](int64_t) { return !InterruptGuard::requested(); };  // Ctrl-C ends the sample
  const auto ids = model_->generate({nl >= 0 ? nl : 0}, opt, sample_gen);
  model_->train();
  return corpus_.tokenizer.decode(ids);
}

}  // namespace ag::train
