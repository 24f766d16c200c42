// The gradient report: after a backward, one row per parameter (name, shape, L2 norm of the
// values, L2 norm of the gradient, and their ratio |grad|/|value|, the scale of a plain SGD
// step relative to the weights at lr 1), then totals per layer and over the whole model.
// A layer is the name up to "blocks.N" for the transformer blocks, else its first component
// ("tok_emb", "ln_f").
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace ag::train {

struct GradNorms {
  std::string name;
  Shape shape;           // empty for layer and total rows
  int64_t numel = 0;
  int64_t tensors = 1;   // how many parameters a layer or total row sums over
  double value_norm = 0;
  double grad_norm = 0;  // NaN when no gradient reached the parameter
  // grad_norm / value_norm; NaN when the values are all zero (a fresh bias) or there is no gradient
  double ratio() const;
};

struct GradReport {
  std::vector<GradNorms> params;  // in the order given
  std::vector<GradNorms> layers;  // in order of first appearance
  GradNorms total;                // the global norms (grad_norm is what clipping compares)
  int64_t without_grad = 0;       // parameters no gradient reached
  int64_t max_ratio = -1;         // index in params of the largest finite ratio, -1 if none
};

// "blocks.3.attn.in_proj_weight" -> "blocks.3"; "tok_emb.weight" -> "tok_emb"; "w" -> "w".
std::string layer_of(const std::string& param_name);

GradReport grad_report(const std::vector<std::pair<std::string, Tensor>>& named_params);

// The table, one line per parameter, then the layers, then the total.
std::string format_grad_report(const GradReport& report);
// One line: "grad norm 0.412 (|value| 45.1); largest |grad|/|value| 3.1e-02 in blocks.0.ln1.bias".
std::string grad_report_summary(const GradReport& report);

// A report taken by `attograd train --grad-report` in the step before an evaluation, ready to
// be written into the run folder and announced.
struct GradReportFile {
  std::string name;     // "grad_report_iter<N>.txt", N the evaluation's iter
  std::string text;     // a heading, then format_grad_report
  std::string summary;  // grad_report_summary
};
// The report of named_params' gradients in step `step` (loss `loss`), for the evaluation after it.
GradReportFile grad_report_file(const std::vector<std::pair<std::string, Tensor>>& named_params, int64_t step,
                                double loss);

}  // namespace ag::train
