// Small matrices given on the command line as JSON ("[[1,0],[0,1]]"), for `explain attention`
// and `explore --attention`; every problem is a UsageError naming the flag.
#pragma once
#include <string>
#include <vector>

#include "autograd/dtype.h"
#include "cli/commands.h"
#include "viz/attention_walk.h"

namespace ag::cli {

// The matrix flags are named as in the formulas, --q, --k, --v, --g; cxxopts reads a one-letter
// name as a short option (-q) only. This argv has "--q X" and "--q=X" rewritten to "-q X"
// (for q, k, v, g), for cxxopts to parse.
class MatrixFlagArgs {
 public:
  MatrixFlagArgs(int argc, char** argv);
  int argc() const { return static_cast<int>(ptrs_.size()) - 1; }
  char** argv() { return ptrs_.data(); }

 private:
  std::vector<std::string> storage_;
  std::vector<char*> ptrs_;  // into storage_, then nullptr
};

// At most kMaxMatrixSide rows and columns: these commands print or draw every entry.
constexpr int kMaxMatrixSide = 8;

// A matrix of numbers; with booleans, of 0/1 or true/false (a mask: 1 = hidden).
viz::Matrix parse_matrix_flag(const std::string& flag, const std::string& text, bool booleans = false);

// The seed example with the flags --q, --k, --v, --g, --mask and --causal of `args` applied,
// checked (check_attention_walk_input; its complaints become UsageErrors naming the flag).
// *custom is set when the user gave Q, K or V. A value, or a quantity of the walk, beyond the
// range of `dtype` (float64 or float32) is refused naming the flags it comes from and the value.
viz::AttentionWalkInput attention_input_from_flags(const cxxopts::ParseResult& args, bool* custom,
                                                   DType dtype = DType::Float64);

}  // namespace ag::cli
