// The loss curves of a training run, from the metrics.jsonl that `attograd train` writes:
// one JSON object a line with iter, train_loss, val_loss (null on the lines logged between
// evaluations, whose train_loss is that of one batch), lr, tokens_per_s and elapsed_s.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "viz/image.h"

namespace ag::viz {

struct MetricsRow {
  int64_t iter = 0;
  double train_loss = 0;
  std::optional<double> val_loss;  // set on evaluation lines
  double lr = 0;
};

// Reads a metrics.jsonl (a regular file only: base/input_file.h). A malformed line throws
// std::runtime_error "<path>:<line>: <problem>". A last line without its newline is where the
// file was cut (a run killed mid-write, a full disk): the lines before it are the data, it is
// not. No rows is an error.
std::vector<MetricsRow> read_metrics(const std::string& path);

// Two panels against the step: the loss (train loss of each logged batch as a thin line, and
// the train and val estimates of each evaluation as points joined by lines), and below it the
// learning rate.
Image render_loss_plot(const std::vector<MetricsRow>& rows, const std::string& title, int width = 900,
                       int height = 600);

// Several runs overlaid, one color each: the evaluations' val loss (points and a line) and train
// loss (a thin line) labelled "<name> val" / "<name> train", and each run's learning rate below.
struct NamedRun {
  std::string name;
  std::vector<MetricsRow> rows;
};
Image render_runs_plot(const std::vector<NamedRun>& runs, const std::string& title, int width = 900, int height = 600);

}  // namespace ag::viz
