// The backward formula of every recorded op, as its source states it: the comment beside each
// record(...) call in autograd/ops/*.cpp ("out = a @ b  =>  da = g @ bᵀ, db = aᵀ @ g"), or the
// one-line backward itself. tools/backward_formulas.cpp extracts them from the sources at build
// time, so the comment in the source stays the one place a formula is written.
//
// A node is matched to its record() call by the place record() was called from (the engine's
// ObserveRecordGuard reports it), not by op name: ops such as reshape, view and squeeze share one
// call, and one name can have several (sum and mean).
#pragma once
#include <span>
#include <string_view>

namespace ag::viz {

struct BackwardFormula {
  const char* file;  // relative to the source tree: "autograd/ops/matmul.cpp"
  int line;          // of the record(...) call
  const char* text;  // the comment (lines joined by '\n'), or the code of a one-line backward
  int kind;          // 0: the comment at the call; 1: the backward's one line of code;
                     // 2: the derivation nearest above the call in the same file
  int text_line;     // where `text` starts
};

std::span<const BackwardFormula> backward_formulas();

// The entry for the record() call at file:line; `file` may be absolute or relative (as
// __builtin_FILE gave it) and is matched by its ending. Null when there is none.
const BackwardFormula* backward_formula(std::string_view file, int line);

}  // namespace ag::viz
