#include "viz/backward_formulas.h"

namespace ag::viz {

namespace {
constexpr BackwardFormula kFormulas[] = {
#include "backward_formulas.inc"
};
}  // namespace

std::span<const BackwardFormula> backward_formulas() { return kFormulas; }

const BackwardFormula* backward_formula(std::string_view file, int line) {
  for (const BackwardFormula& f : kFormulas) {
    if (f.line != line) continue;
    const std::string_view rel = f.file;
    if (file == rel || (file.size() > rel.size() && file.ends_with(rel) && file[file.size() - rel.size() - 1] == '/'))
      return &f;
  }
  return nullptr;
}

}  // namespace ag::viz
