// The configuration of a training run, as one table. Each row of AG_TRAIN_FIELDS is
//   X(type, member, flag, default, help, on_resume, check)
// and declares a member of TrainConfig with its default. visit_fields() walks these rows and
// the model's (models/model_config.h), and everything else is derived from that walk:
//   * the flags of `attograd train`, their help and their shown defaults (cli/cmd_train.cpp);
//   * the run configuration saved as JSON in the train state (config_to_json / config_from_json);
//   * what `--resume` accepts (on_resume below);
//   * which values are valid (check below; train/config/config_check.h applies the rules).
// To add a hyperparameter, add one row (tests/train/test_run_config.cpp checks every row end to end).
// A field that names one of several things (--optimizer, --schedule) is a Choice of a registry
// (train/config/choice.h), whose rows bring settings of their own (--muon-lr, --cooldown):
// the walk visits those too, after the table's rows, so they are flags, config keys and saved
// fields alike. TrainConfig is plain data: what a run observes or is hooked into travels separately
// (train/trainer.h: RunHooks).
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_config.h"
#include "train/config/choice.h"
#include "train/config/field.h"
#include "train/optimizers/registry.h"
#include "train/schedules/registry.h"

namespace ag::train {

// clang-format off
#define AG_TRAIN_FIELDS(X)                                                                                                   \
  X(std::string, data_path,      "data",           "",    "training text (UTF-8); first 90% train, last 10% validation", Override, Required) \
  X(std::string, out_dir,        "out",            "",    "run folder: model.safetensors, metrics.jsonl, train_state.safetensors", Refuse, Required) \
  X(std::string, init_from,      "init-from",      "",    "fine-tune: start from the weights of this run folder or model.safetensors (its model, its vocabulary; a fresh optimizer and schedule; only --dropout of the model flags may be given)", Refuse, Any) \
  X(int64_t,     batch_size,     "batch",          12,    "sequences per step (global: under mpirun -np N each rank takes batch/N of them)", Refuse, Positive) \
  X(int64_t,     grad_accum,     "grad-accum",     1,     "micro-batches per step (nanoGPT's gradient_accumulation_steps), each of batch/(N*K) rows; only the last one communicates", Override, Positive) \
  X(int64_t,     iters,          "iters",          2000,  "optimizer steps (with --resume: extend or shorten the run where the schedule allows, see docs/training.md)", Override, NonNegative) \
  X(double,      time_budget,    "time-budget",    0,     "train for this many seconds of wall time, data and the final evaluation included: the step count (at most --iters) is planned again after every step from the steps timed, so the schedule's decay follows the time, and each plan is recorded, so --resume stays exact (0: off; see docs/speedrun.md)", Refuse, NonNegative) \
  X(double,      lr,             "lr",             1e-3,  "peak learning rate", Refuse, Positive)                                         \
  X(double,      min_lr,         "min-lr",         1e-4,  "final learning rate of the cosine decay", Refuse, NonNegative)                    \
  X(int64_t,     warmup,         "warmup",         100,   "linear warmup steps", Refuse, NonNegative)                                        \
  X(int64_t,     block_warmup,   "block-warmup",   0,     "sequence-length warmup: the training batches' sequence length rises linearly from --block-start at step 0 to the model's --block at this step, in multiples of 8, then stays; the model and every evaluation are unchanged (0: off; see docs/speedrun.md)", Refuse, NonNegative) \
  X(int64_t,     block_start,    "block-start",    32,    "the training sequence length at step 0 under --block-warmup (at most --block)", Refuse, Positive) \
  X(int64_t,     batch_warmup,   "batch-warmup",   0,     "batch-size warmup: the training batch rises linearly from --batch-start sequences at step 0 to --batch at this step, in multiples of ranks × --grad-accum, then stays; evaluations use --batch (0: off; see docs/speedrun.md)", Refuse, NonNegative) \
  X(int64_t,     batch_start,    "batch-start",    4,     "the training batch at step 0 under --batch-warmup (at most --batch, divisible by ranks × --grad-accum)", Refuse, Positive) \
  X(ScheduleChoice, schedule,   "schedule",       ScheduleChoice("cosine"), "learning-rate schedule, a factor on each parameter group's peak rate", Refuse, Any) \
  X(OptimizerChoice, optimizer, "optimizer",      OptimizerChoice("adamw"), "the optimizer, and the parameter groups it makes from the model's parameter table", Refuse, Any) \
  X(double,      weight_decay,   "weight-decay",   0.1,   "decoupled weight decay of AdamW's (and Muon's) parameters of two or more dims", Refuse, NonNegative) \
  X(double,      beta1,          "beta1",          0.9,   "AdamW beta1", Refuse, Fraction)                                                \
  X(double,      beta2,          "beta2",          0.99,  "AdamW beta2", Refuse, Fraction)                                                \
  X(double,      grad_clip,      "grad-clip",      1.0,   "clip the global gradient norm to this (0: off)", Refuse, NonNegative)            \
  X(int64_t,     eval_every,     "eval-every",     250,   "evaluate and checkpoint every N steps", Refuse, Positive)                      \
  X(int64_t,     eval_iters,     "eval-iters",     20,    "batches per split in each evaluation, or all: the whole validation split in order (deterministic) and as many random training batches", Refuse, CountOrAll) \
  X(int64_t,     log_every,      "log-every",      10,    "log a line every N steps", Refuse, Positive)                                   \
  X(uint64_t,    seed,           "seed",           1337,  "random seed", Refuse, Any)                                                \
  X(GeneratorKind, generator,    "generator",      GeneratorKind::Attograd, "the random stream the seed starts (the model's init and dropout, the batches, the evaluation's batches, the sample): attograd (xoshiro256**, attograd's own), or torch (torch's CPU generator, mt19937 with torch's own transforms: the numbers torch draws after the same seed)", Refuse, Any) \
  X(int,         threads,        "threads",        0,     "threads (0: one per core); OpenBLAS runs single-threaded inside them", Fresh, Threads) \
  X(Precision,   precision,      "precision",      Precision::FP32, "fp32, or bf16: every matrix product (linear, attention, the MLP, the head) takes bfloat16 operands with float32 accumulation, as torch.autocast(\"cpu\", torch.bfloat16); weights, optimizer state, norms, softmax and the loss stay float32, and so do checkpoints (with --resume: only the recorded one)", Override, Any) \
  X(GemmChoice,  gemm,           "gemm",           GemmChoice::Auto, "the GEMM library: openblas, onednn, or auto (the faster of the two at this model's shapes, measured once per machine and kept beside the MFU peak); the run records the provider it used (with --resume: only the recorded one, or auto for it)", Override, Any) \
  X(GemmBf16Choice, gemm_bf16,   "gemm-bf16",      GemmBf16Choice::Auto, "under --precision bf16, where oneDNN runs the GEMMs on the CPU's bf16 instructions: matmul (oneDNN's matmul primitive, kernels made for each shape and kept; AMX tiles where the CPU has them), gemm (its gemm API, dnnl_gemm_bf16bf16f32), or auto (matmul only where it is faster by 5% at this model's shapes, measured once per machine and kept beside --gemm auto's choice); the run records the one it used (with --resume: only the recorded one, or auto for it)", Override, Any) \
  X(int64_t,     sample_tokens,  "sample-tokens",  300,   "characters to sample at the end (0: none)", Refuse, NonNegative)                 \
  X(int64_t,     sample_every,   "sample-every",   0,     "print a short sample (100 characters, temperature 0.8) every N steps (0: never); its own generator, so the run is unchanged", Fresh, NonNegative) \
  X(bool,        no_progress,    "no-progress",    false, "plain log lines even on a terminal", Fresh, Any)                         \
  X(bool,        overwrite,      "overwrite",      false, "start a new run in --out even if it holds one (the old run's files are removed)", Fresh, Any) \
  X(bool,        skip_nonfinite, "skip-nonfinite", false, "skip (and count) updates whose loss or gradients are NaN/Inf instead of stopping", Refuse, Any) \
  X(bool,        grad_report,    "grad-report",    false, "at each evaluation, write DIR/grad_report_iter<N>.txt (norms of every parameter and its gradient in the step before) and print a summary line", Refuse, Any) \
  X(bool,        tensorboard,    "tensorboard",    false, "write TensorBoard event files into DIR/tb: losses, lr, gradient norm, tokens/s and MFU; at each evaluation histograms of every weight and gradient, attention maps and a sample", Fresh, Any) \
  X(bool,        detect_anomaly, "detect-anomaly", false, "anomaly mode (slower): every op notes where it was recorded, and a backward function returning NaN/Inf stops the run naming the op and that place", Fresh, Any) \
  X(double,      comm_timeout,   "comm-timeout",   60,    "under mpirun: end the job (exit status 75, peer lost) when a rank sends no heartbeat for this many seconds while another waits for it in a collective (a cut link, a lost host, a stopped process); a slow rank keeps sending them, so a long first step, evaluation or checkpoint never trips it (0: wait forever; see docs/distributed.md)", Fresh, Timeout) \
  X(int64_t,     profile_steps,  "profile-steps",  0,     "profile N steps after the run's first (warm-up) step: DIR/trace.json (Chrome trace: each op, backward node, GEMM and pool task; open it in ui.perfetto.dev) and DIR/profile_table.txt (time per op, forward and backward), also printed", Fresh, Any)
// clang-format on

struct TrainConfig {
  models::ModelConfig model;  // AG_MODEL_FIELDS; vocab_size comes from the corpus
#define AG_DECLARE_TRAIN_FIELD(type, member, flag, def, help, on_resume, check) type member = def;
  AG_TRAIN_FIELDS(AG_DECLARE_TRAIN_FIELD)
#undef AG_DECLARE_TRAIN_FIELD
  Settings settings;  // the registered choices' settings (a row reads its own: cfg.settings.get(kMuonLr))
};

// A setting of a registered row (train/config/choice.h), with the choice it belongs to.
struct RegisteredSetting {
  const Setting* setting;
  const char* choice_flag;  // "optimizer"
  std::string row;          // "muon"
  std::function<bool(const TrainConfig&)> chosen;                // whether a configuration chose that row
  std::function<std::string(const TrainConfig&)> chosen_name;  // the row a configuration chose
  FieldInfo info() const { return {setting->flag, setting->key, setting->help, OnResume::Refuse, setting->check}; }
};
// Every registered row's settings: the optimizers', then the schedules'.
std::vector<RegisteredSetting> registered_settings();

// A registered setting's value by its flag ("muon-lr"), for code that sets one as the flag
// would (tests, programs); std::invalid_argument when no registered row declares it.
double& setting(TrainConfig& c, std::string_view flag);
double setting(const TrainConfig& c, std::string_view flag);

inline double& setting_value(TrainConfig& c, const Setting& s) { return c.settings.ref(s); }
inline const double& setting_value(const TrainConfig& c, const Setting& s) { return c.settings.get(s); }

// Calls f(info, c.member...) for every row, the registered settings after the table's and the
// model's last, over one or more configurations at once (TrainConfig or const TrainConfig); f
// must accept each member type (std::string, int64_t, uint64_t, int, double, bool, and the
// Choice fields of train/config/choice.h).
template <class F, class... Config>
void for_each_field(F&& f, Config&... c) {
#define AG_VISIT_TRAIN_FIELD(type, member, flag, def, help, on_resume, check) \
  f(FieldInfo{flag, #member, help, OnResume::on_resume, Check::check}, c.member...);
  AG_TRAIN_FIELDS(AG_VISIT_TRAIN_FIELD)
#undef AG_VISIT_TRAIN_FIELD
  for (const RegisteredSetting& s : registered_settings()) f(s.info(), setting_value(c, *s.setting)...);
#define AG_VISIT_MODEL_FIELD(type, member, flag, def, help) \
  f(FieldInfo{flag, #member, help, OnResume::Refuse, Check::Any}, c.model.member...);
  AG_MODEL_FIELDS(AG_VISIT_MODEL_FIELD)
#undef AG_VISIT_MODEL_FIELD
}

// f(member, info) for every row of one configuration.
template <class Config, class F>
void visit_fields(Config& c, F&& f) {
  for_each_field([&](const FieldInfo& info, auto& member) { f(member, info); }, c);
}

// --eval-iters all: the whole validation split (train/evaluate.h).
inline constexpr int64_t kEvalWholeSplit = 0;
// A field of Check::CountOrAll (--eval-iters): "all" (0) or a positive count. Its one rule, for
// the command line and a TOML file alike, and its message: "NAME must be a positive count or
// all, got 'GIVEN'" (0 is how "all" is held, never a count the user gives).
std::string count_or_all_rule(const std::string& name, const std::string& given);
// Throws std::invalid_argument with that message for --flag otherwise.
int64_t parse_count_or_all(const std::string& text, const char* flag);
std::string format_count_or_all(int64_t n);  // "all" or the count

// A value as the help text and config files show it: the shortest decimal that reads back
// exactly for doubles ("0.001", "1e-08"), "true"/"false" for bools, a choice's name.
std::string format_value(double v);
std::string format_value(int64_t v);
std::string format_value(uint64_t v);
std::string format_value(int v);
std::string format_value(bool v);
inline std::string format_value(const std::string& v) { return v; }

// The run configuration as JSON: every field of the table, plus model.vocab_size.
std::string config_to_json(const TrainConfig& cfg);
// Throws std::runtime_error naming `source` when a field is missing or of the wrong type.
// Fields added after the first train states (see kFirstFields in run_config.cpp) may be
// absent: they take their defaults, which reproduce the runs made before they existed.
TrainConfig config_from_json(const std::string& json, const std::string& source);

// The configuration a resumed run continues with: `saved` for every field, except the Fresh
// ones (always from `now`) and the Override ones named in `given` (by flag).
TrainConfig resumed_config(const TrainConfig& saved, const TrainConfig& now, const std::set<std::string>& given);

}  // namespace ag::train
