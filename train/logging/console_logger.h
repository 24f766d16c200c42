// What `attograd train` prints: the run's header, then on a terminal a progress bar redrawn in
// place (train/logging/progress.h), else a log line every --log-every steps; evaluations, samples,
// notes and the end as lines of their own. The terminal's escape codes live here alone: every
// line first clears the bar, so the bar never leaves a row behind.
#pragma once
#include <iosfwd>
#include <string>

#include "train/logging/run_logger.h"

namespace ag::train {

class ConsoleLogger : public RunLogger {
 public:
  // The bar is drawn when out is std::cout on a terminal and the run's no_progress is off.
  explicit ConsoleLogger(std::ostream& out);

  void on_start(const RunStart& e) override;
  void on_step(const StepEnd& e) override;
  void on_eval(const EvalEnd& e) override;
  void on_sample(const Sample& e) override;
  void on_stop(const Stop& e) override;
  void on_note(const std::string& line) override;

  // nanoGPT's log line with attograd's fields: "iter    10/2000  loss 2.3456  lr 1.000e-03
  // 41.2 ms/step  3105 tok/s  mfu 4.5%  ETA 1m22s".
  static std::string log_line(const StepEnd& e);

 private:
  void line(const std::string& text);  // a whole line (text ends with '\n'), under the bar if drawn

  std::ostream& out_;
  bool bar_ = false;
};

}  // namespace ag::train
