// `attograd train --tensorboard`: a RunLogger that writes RUN/tb/events.out.tfevents.* for
// TensorBoard. Tags:
//   loss/train_batch, lr, grad_norm,                 every logged step (--log-every)
//   throughput/tokens_per_s, throughput/ms_per_step,
//   throughput/mfu
//   loss/train, loss/val                             every evaluation (--eval-every)
//   weights/<parameter>, grads/<parameter>           histograms, every evaluation (grads once
//                                                    a step has run: its gradients after clipping)
//   attention/layer<i>                               image, every evaluation: the heads of layer i
//                                                    on a fixed prompt (the start of the
//                                                    validation text); models with attention only
//   sample                                           text, every evaluation: sample_chars
//                                                    characters at temperature 0.8, same seed each time
// The step of each point is the number of updates made. A resumed run first writes a restart
// at its step, so TensorBoard drops what the interrupted run had logged past its checkpoint.
#pragma once
#include <memory>
#include <ostream>
#include <string>

#include "tensorboard/event_writer.h"
#include "train/logging/run_logger.h"

namespace ag::tensorboard {

class TrainLogger : public train::RunLogger {
 public:
  // dir: where the event file goes (RUN/tb). The file is created by on_start, which also
  // says so on *out when out is given. The scalars are the trainer's (train::StepEnd and
  // train::EvalEnd), the same that metrics.jsonl holds.
  explicit TrainLogger(std::string dir, std::ostream* out = nullptr, int64_t sample_chars = 200);

  void on_start(const train::RunStart& e) override;
  void on_step(const train::StepEnd& e) override;  // the logged steps
  void on_eval(const train::EvalEnd& e) override;

  const std::string& path() const;  // of the event file, once started

 private:
  std::string dir_;
  std::ostream* out_;
  int64_t sample_chars_;
  std::unique_ptr<EventWriter> writer_;
  uint64_t seed_ = 0;
  const data::CharTokenizer* tokenizer_ = nullptr;  // the run's; lives as long as the run
  std::string prompt_;        // of the attention maps
  int64_t newline_id_ = 0;    // the sample's first token
};

}  // namespace ag::tensorboard
