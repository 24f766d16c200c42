#include "train/logging/console_logger.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "train/logging/progress.h"

namespace ag::train {

namespace {
// Erases the progress bar's row and returns to its start (a line printed next replaces it).
constexpr const char* kClearRow = "\r\033[K";
}  // namespace

ConsoleLogger::ConsoleLogger(std::ostream& out) : out_(out) {}

void ConsoleLogger::line(const std::string& text) {
  if (bar_) out_ << kClearRow;
  out_ << text;
  out_.flush();
}

void ConsoleLogger::on_start(const RunStart& e) {
  const TrainConfig& c = e.cfg;
  bar_ = !c.no_progress && &out_ == &std::cout && isatty(STDOUT_FILENO);
  std::ostringstream s;
  s << "attograd train: " << e.corpus.path << " (" << e.corpus.num_tokens() << " characters, vocab " << c.model.vocab_size
    << ", train " << e.corpus.train_ids.size() << ", val " << e.corpus.val_ids.size() << ")\n"
    << "model: " << e.model.summary() << ", " << e.model.num_parameters() << " parameters\n"
    << "run: batch " << c.batch_size << ", " << c.iters << " iters, lr " << c.lr << " -> " << c.min_lr << ", warmup "
    << c.warmup << ", seed " << c.seed << ", out " << c.out_dir << "\n";
  // The steps' shape warmups (train/step_shape.h), when on.
  if (c.block_warmup > 0)
    s << "sequence-length warmup: " << std::min(c.block_start, c.model.block_size) << " to " << c.model.block_size << " over "
      << c.block_warmup << " steps\n";
  if (c.batch_warmup > 0)
    s << "batch warmup: " << std::min(c.batch_start, c.batch_size) << " to " << c.batch_size << " over " << c.batch_warmup
      << " steps\n";
  const TrainConfig defaults;
  if (!(c.optimizer == defaults.optimizer) || !(c.schedule == defaults.schedule) || c.time_budget > 0) {
    // nanoGPT's recipe (the defaults) says nothing more; otherwise each choice's row says what it is.
    s << "recipe: " << c.optimizer->describe(c) << ", " << c.schedule->describe(c);
    if (c.time_budget > 0) s << ", time budget " << c.time_budget << " s";
    s << "\n";
  }
  if (e.ranks > 1 || c.grad_accum > 1)
    s << "data parallel: " << e.ranks << (e.ranks == 1 ? " rank" : " ranks") << " x " << c.grad_accum
      << " micro-batches of " << c.batch_size / (e.ranks * c.grad_accum) << " rows"
      << (e.buckets > 0 ? ", gradients averaged in " + std::to_string(e.buckets) + " buckets (" +
                              std::to_string(e.grad_bytes_per_step / 1024) + " KiB per step)"
                        : std::string())
      << "\n";
  if (!e.gemm.empty()) s << e.gemm << "\n";
  if (!e.precision.empty()) s << e.precision << "\n";
  char peak[80];
  std::snprintf(peak, sizeof peak, "mfu: against %s peak of %.0f GFLOP/s",
                c.precision == Precision::BF16 ? "a bf16 GEMM" : "an sgemm", e.peak.gflops);
  s << peak << " (" << e.peak.source << ")\n";
  if (e.start_iter > 0) s << "resuming at iter " << e.start_iter << "\n";
  out_ << s.str();  // before any bar: no row to clear
  out_.flush();
}

std::string ConsoleLogger::log_line(const StepEnd& e) {
  char buf[240];
  std::snprintf(buf, sizeof buf, "iter %5ld/%ld  loss %.4f  lr %.3e  %.1f ms/step  %.0f tok/s  mfu %.1f%%  ETA %s\n",
                static_cast<long>(e.iter), static_cast<long>(e.iters), e.loss, e.lr, e.ms_per_step, e.tokens_per_s,
                100 * e.mfu, format_duration(e.eta_s).c_str());
  return buf;
}

void ConsoleLogger::on_step(const StepEnd& e) {
  if (!e.skipped.empty())
    line(e.skipped + "; update skipped (" + std::to_string(e.skipped_updates) + " so far)\n");
  if (bar_) {
    out_ << kClearRow
         << progress_line({e.iter, e.iters, e.loss, e.lr, e.tokens_per_s, e.eta_s, e.mfu, e.ms_per_step},
                          terminal_columns(STDOUT_FILENO));
    out_.flush();
  } else if (e.logged) {
    line(log_line(e));
  }
}

void ConsoleLogger::on_eval(const EvalEnd& e) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "eval  iter %5ld  train %.4f  val %.4f  (%s)\n", static_cast<long>(e.iter), e.train_loss,
                e.val_loss, format_duration(e.elapsed_s).c_str());
  line(buf);
  if (e.grad_report)
    line("grads iter " + std::to_string(e.iter) + "  " + e.grad_report->summary + "  (" + e.grad_report->name + ")\n");
}

void ConsoleLogger::on_sample(const Sample& e) {
  if (!e.final) {
    line("---- sample at iter " + std::to_string(e.iter) + " ----" + e.text + "\n----\n");
    return;
  }
  line("---- sample (temperature 0.8) ----" + e.text + "\n----\n");
  if (e.interrupted_by)
    line("sample interrupted (signal " + std::to_string(e.interrupted_by) + "); the run itself is complete\n");
}

void ConsoleLogger::on_stop(const Stop& e) {
  std::ostringstream s;
  if (e.interrupted) {
    s << "\ninterrupted (" << (e.signal ? "signal " + std::to_string(e.signal) : std::string("a signal to another rank"))
      << ") after iter " << e.iter << (e.ranks > 1 ? " on all " + std::to_string(e.ranks) + " ranks" : std::string())
      << "; checkpoint written to " << e.dir << "\nresume with: attograd train --resume " << e.dir << "\n";
  } else {
    s << "done: " << e.iters << " iters in " << format_duration(e.seconds) << ", val loss " << e.val_loss << ", model "
      << (std::filesystem::path(e.dir) / "model.safetensors").string();
    if (e.skipped_updates) s << ", " << e.skipped_updates << " updates skipped (non-finite)";
    s << "\n";
  }
  line(s.str());
}

void ConsoleLogger::on_note(const std::string& text) { line(text + "\n"); }

}  // namespace ag::train
