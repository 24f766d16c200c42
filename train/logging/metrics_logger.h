// metrics.jsonl: one JSON object per line, a line per logged step and one per evaluation, with
// every scalar the run reports (TensorBoard's scalars are the same fields, tests hold them
// together):
//   {"iter", "train_loss", "val_loss" (null on a step line), "lr", "grad_norm" (null on an
//    evaluation line), "tokens_per_s", "ms_per_step", "mfu", "elapsed_s"}
// An evaluation line repeats the throughput of the last logged step. Every write is checked: a
// failed one (a full disk) stops the run with an error naming the file, never a silent gap;
// `--resume` then continues from the last checkpoint, and the lines after it are dropped
// (truncate_metrics), a torn last line too.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "base/atomic_file.h"
#include "train/logging/run_logger.h"

namespace ag::train {

class MetricsLogger : public RunLogger {
 public:
  explicit MetricsLogger(std::string path);  // the file is opened by on_start
  ~MetricsLogger() override;
  MetricsLogger(const MetricsLogger&) = delete;
  MetricsLogger& operator=(const MetricsLogger&) = delete;

  // A new run starts the file afresh; a resumed one keeps the lines of the steps it has made.
  void on_start(const RunStart& e) override;
  void on_step(const StepEnd& e) override;
  void on_eval(const EvalEnd& e) override;

 private:
  void write_line(const std::string& json);  // the line and its "\n" in one write; throws std::runtime_error

  std::string path_;
  std::unique_ptr<AppendFile> out_;
  StepEnd last_;  // the last logged step: the throughput an evaluation line repeats
};

// Keeps the lines of a metrics.jsonl whose iter ≤ last_iter (what a resumed run has already
// accounted for); later lines belong to steps that will be run again, and a torn last line (a
// crash mid-write) is dropped. Rewritten atomically: a crash meanwhile leaves the old file.
void truncate_metrics(const std::string& path, int64_t last_iter);

}  // namespace ag::train
