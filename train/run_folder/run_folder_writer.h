// The run folder's files besides metrics.jsonl, written as the run reaches them (Lightning's
// ModelCheckpoint is such a callback too):
//   config.toml                    a new run's configuration, resolved and readable (on_start)
//   train_state.safetensors        everything --resume needs, self-contained (on_checkpoint)
//   model.safetensors              the latest weights
//   model.best.safetensors         the weights of the best validation loss so far
//   grad_report_iter<N>.txt        with --grad-report, at each evaluation after a step (on_eval)
// Each file is replaced atomically, so a crash at any moment leaves the previous good one; the
// train state goes first, so model.safetensors is never newer than what a resume restores.
#pragma once
#include <string>

#include "train/logging/run_logger.h"

namespace ag::train {

class RunFolderWriter : public RunLogger {
 public:
  explicit RunFolderWriter(std::string dir);

  void on_start(const RunStart& e) override;
  void on_eval(const EvalEnd& e) override;
  void on_checkpoint(const Checkpoint& e) override;

 private:
  std::string path(const std::string& name) const;
  std::string dir_;
};

}  // namespace ag::train
