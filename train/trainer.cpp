// Setting a training run up: a new one (train_lm), a fine-tuning one (--init-from) or a resumed
// one (resume_lm). The configuration is validated once (train/config/config_check.h), the model's
// registry entry resolved once, the loggers attached on rank 0, then train/run.cpp's loop
// runs.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "base/input_file.h"
#include "base/memory_limit.h"
#include "autograd/parallel.h"
#include "data/corpus.h"
#include "train/run_folder/checkpoint.h"
#include "train/config/config_check.h"
#include "train/config/config_error.h"
#include "train/config/config_file.h"
#include "train/logging/console_logger.h"
#include "train/logging/metrics_logger.h"
#include "train/logging/profile.h"
#include "train/rank_agreement.h"
#include "train/rank_fingerprint.h"
#include "train/run.h"
#include "train/run_folder/run_dir.h"
#include "train/run_folder/run_folder_writer.h"
#include "train/schedules/registry.h"
#include "train/run_folder/run_identity.h"

namespace ag::train {

namespace fs = std::filesystem;

namespace {
void report_removed(const RunDir& dir, std::ostream& out) {
  for (const auto& f : dir.removed_temporaries()) out << "removed " << f << " (left by a process that was killed)\n";
}

// 0: all cores for one process; under mpirun, the cores shared among this machine's ranks.
void set_threads(const TrainConfig& cfg, const distributed::Comm& comm) {
  if (cfg.threads > 0 || comm.distributed()) parallel::set_num_threads(cfg.threads > 0 ? cfg.threads : comm.threads_per_rank());
}

// Rank 0's loggers: the console, metrics.jsonl, the run folder's files, then the caller's. The
// other ranks have none: they neither print nor write.
std::vector<std::shared_ptr<RunLogger>> loggers_of(const distributed::Comm& comm, const TrainConfig& cfg, std::ostream& out,
                                                   const RunHooks& hooks) {
  if (!comm.is_root()) return {};
  std::vector<std::shared_ptr<RunLogger>> l = {std::make_shared<ConsoleLogger>(out),
                                               std::make_shared<MetricsLogger>((fs::path(cfg.out_dir) / "metrics.jsonl").string()),
                                               std::make_shared<RunFolderWriter>(cfg.out_dir)};
  if (cfg.tensorboard && hooks.loggers.empty())  // never silently without the logs asked for
    throw std::invalid_argument("train: tensorboard is set but no writer is attached (tensorboard/train_logger.h)");
  l.insert(l.end(), hooks.loggers.begin(), hooks.loggers.end());
  return l;
}
}  // namespace

namespace {
// The run's clock now (hooks.clock, or the steady clock).
int64_t clock_now(const RunHooks& hooks) {
  if (hooks.clock) return hooks.clock();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

TrainSummary train_lm(const TrainConfig& cfg_in, std::ostream& out, const RunHooks& hooks) {
  const int64_t started_ns = clock_now(hooks);  // a time budget counts reading the data
  TrainConfig cfg = cfg_in;
  distributed::Comm& comm = distributed::Comm::world();
  const models::ModelEntry* entry = &validate_config(cfg, comm.size());
  check_ranks_agree(comm, cfg);
  set_threads(cfg, comm);
  std::optional<LoadedModel> init;
  if (!cfg.init_from.empty()) {  // the model and its vocabulary come from the checkpoint
    init = load_model(cfg.init_from);
    const double dropout = cfg.model.dropout;  // nanoGPT's rule: of the model, only dropout may change
    cfg.model = init->model->model_config();
    cfg.model.dropout = dropout;
    entry = &models::find_model(cfg.model.name);
  }
  data::Corpus corpus = data::load_corpus(cfg.data_path, cfg.model.block_size);
  check_same_corpus(comm, corpus);
  if (init && !(corpus.tokenizer == init->tokenizer))
    throw std::runtime_error(cfg.data_path + ": its vocabulary (" + std::to_string(corpus.tokenizer.vocab_size()) +
                             " characters) differs from the one of " + init->path + " (" +
                             std::to_string(init->tokenizer.vocab_size()) +
                             "); --init-from needs a text with exactly the model's characters");
  cfg.model.vocab_size = corpus.tokenizer.vocab_size();
  check_model(*entry, cfg);
  if (comm.is_root()) ProfileSession::require_fits(cfg.profile_steps, cfg.out_dir);  // rank 0 writes the trace
  auto loggers = loggers_of(comm, cfg, out, hooks);
  // Locked (by rank 0, which alone writes it) once the command line has proven sound, before
  // anything is written.
  std::optional<RunDir> run_dir;
  std::string run_id;
  if (comm.is_root()) {
    run_dir.emplace(cfg.out_dir, cfg.overwrite ? RunDir::Mode::Overwrite : RunDir::Mode::Fresh);
    report_removed(*run_dir, out);
    if (init) out << "initialized from " << init->path << "\n";
    run_id = new_run_id();  // rank 0 alone writes the folder and its train states
    write_run_id(cfg.out_dir, run_id);
  }
  Run run(cfg, *entry, std::move(corpus), comm, std::move(loggers), hooks, started_ns);
  run.set_run_id(run_id);
  if (init) run.init_weights_from(*init->model);  // every rank loaded the same file
  return run.run(/*resumed=*/false);
}

void check_iters_change(const TrainConfig& saved, int64_t new_iters, int64_t steps_taken, const std::string& dir) {
  if (new_iters < steps_taken)
    throw ConfigError("--iters " + std::to_string(new_iters) + ": the run in " + dir + " has already taken " +
                      std::to_string(steps_taken) + " steps");
  // The steps taken used the old schedule; a run given new_iters from the start would have
  // used the new one. Exact only if they agree on every step taken (bit for bit).
  if (saved.time_budget > 0)
    throw ConfigError("--iters " + std::to_string(new_iters) + " cannot change the run in " + dir +
                      ": its --time-budget plans the step count (at most the --iters it was given)");
  // Every group's rate is its initial_lr times the schedule's factor: the same factors, the
  // same rates. The lr shown is the one of --lr's groups.
  for (int64_t it = 0; it < steps_taken; ++it) {
    const double old_f = schedule_factor(saved, it, saved.iters), new_f = schedule_factor(saved, it, new_iters);
    if (old_f == new_f) continue;
    char msg[1200];
    std::snprintf(msg, sizeof msg,
                  "--iters %ld cannot continue the run in %s exactly: its step %ld used lr %.6g, but a run of %ld iters "
                  "would have used %.6g there (%s). To train further with a new schedule, start a new run from its "
                  "weights: attograd train --init-from %s",
                  static_cast<long>(new_iters), dir.c_str(), static_cast<long>(it), saved.lr * old_f,
                  static_cast<long>(new_iters), saved.lr * new_f, saved.schedule->iters_note(saved).c_str(), dir.c_str());
    throw ConfigError(msg);
  }
}

void check_recorded_choices(const TrainConfig& saved, const TrainConfig& now, const std::set<std::string>& given,
                            const std::string& dir) {
  // The precision and the provider change every product's last bits: a run resumed on
  // others would not continue exactly.
  if (given.count("precision") && now.precision != saved.precision)
    throw ConfigError(std::string("--precision ") + choice_name(now.precision) + " cannot continue the run in " + dir +
                      ": it was recorded with --precision " + choice_name(saved.precision) +
                      " (to train on at another precision, start a new run from its weights: attograd train --init-from " +
                      dir + ")");
  if (given.count("gemm") && now.gemm != GemmChoice::Auto && now.gemm != saved.gemm)
    throw ConfigError(std::string("--gemm ") + choice_name(now.gemm) + " cannot continue the run in " + dir +
                      ": it was recorded with --gemm " + choice_name(saved.gemm) + " (the provider changes the last bits of every product)");
  if (given.count("gemm-bf16") && now.gemm_bf16 != GemmBf16Choice::Auto && now.gemm_bf16 != saved.gemm_bf16)
    throw ConfigError(std::string("--gemm-bf16 ") + choice_name(now.gemm_bf16) + " cannot continue the run in " + dir +
                      ": it was recorded with --gemm-bf16 " + choice_name(saved.gemm_bf16) +
                      " (the interface changes the last bits of every bf16 product)");
}

TrainSummary resume_lm(const std::string& dir, const TrainConfig& now, const std::set<std::string>& given,
                       std::ostream& out, const RunHooks& hooks) {
  const int64_t started_ns = clock_now(hooks);
  distributed::Comm& comm = distributed::Comm::world();
  const std::string state_path = (fs::path(dir) / "train_state.safetensors").string();
  // Rank 0 locks the folder, reads the state and sends its bytes to every rank (the run folder
  // may exist on rank 0's machine only); each rank then parses and validates the same bytes.
  std::optional<RunDir> run_dir;
  std::string bytes, folder_id;
  if (comm.is_root()) {
    RunDir::require_checkpoint(dir);
    run_dir.emplace(dir, RunDir::Mode::Resume);  // before reading: no other run may be writing it
    report_removed(*run_dir, out);
    bytes = read_input_file({state_path, state_path, memory_limit().bytes, "what this process may use", ""});
    folder_id = read_run_id(dir);
  }
  comm.broadcast(bytes);
  comm.broadcast(folder_id);  // every rank refuses a state of another run alike
  const SafeTensorsFile state = SafeTensorsFile::parse(std::move(bytes), state_path);
  LoadedTrainState st = read_train_state(state);
  check_run_identity(dir, folder_id, st.pos.run_id, state_path);
  TrainConfig cfg = resumed_config(st.config, now, given);
  cfg.out_dir = dir;  // the folder may have moved since
  check_recorded_choices(st.config, cfg, given, dir);
  cfg.gemm = st.config.gemm;  // as recorded (--gemm auto on resume: the choice auto made then)
  cfg.gemm_bf16 = st.config.gemm_bf16;  // (likewise)
  const models::ModelEntry& entry = validate_config(cfg, comm.size());
  check_ranks_agree(comm, cfg);
  const bool iters_changed = cfg.iters != st.config.iters;
  if (iters_changed) check_iters_change(st.config, cfg.iters, st.pos.iter, dir);
  set_threads(cfg, comm);
  data::Corpus corpus = data::load_corpus(cfg.data_path, cfg.model.block_size);
  check_same_corpus(comm, corpus);
  if (!(corpus.tokenizer == st.tokenizer))
    throw std::runtime_error(cfg.data_path + ": its vocabulary (" + std::to_string(corpus.tokenizer.vocab_size()) +
                             " characters) does not match the train state's (" + std::to_string(st.tokenizer.vocab_size()) +
                             ") in " + state_path);
  check_model(entry, cfg);
  if (comm.is_root()) ProfileSession::require_fits(cfg.profile_steps, cfg.out_dir);
  auto loggers = loggers_of(comm, cfg, out, hooks);
  if (iters_changed && comm.is_root()) {
    write_config_toml((fs::path(dir) / "config.toml").string(), cfg);  // the run's configuration is now this
    out << (cfg.iters > st.config.iters ? "extending" : "shortening") << " the run from " << st.config.iters << " to "
        << cfg.iters << " iters (" << st.pos.iter
        << " taken; the learning rates of those are the same under both schedules)\n";
  }
  Run run(cfg, entry, std::move(corpus), comm, std::move(loggers), hooks, started_ns);
  run.resume_from(state, st.pos);
  return run.run(/*resumed=*/true);
}

TrainSummary resume_lm(const std::string& dir, const std::string& data_path, int threads, bool progress_bar,
                       std::ostream& out, const RunHooks& hooks) {
  TrainConfig now;
  now.data_path = data_path;
  now.threads = threads;
  now.no_progress = !progress_bar;
  std::set<std::string> given;
  if (!data_path.empty()) given.insert("data");
  return resume_lm(dir, now, given, out, hooks);
}

}  // namespace ag::train
