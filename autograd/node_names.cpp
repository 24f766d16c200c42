#include "autograd/node_names.h"

#include <utility>

namespace ag {

std::string torch_node_name(const std::string& op) {
  bool snake = true;
  for (char c : op) snake &= (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  if (!snake) return op + "Backward";
  // Where torch's node has another name than attograd's op (torch.cat is attograd's concat).
  static const std::pair<const char*, const char*> renamed[] = {
      {"concat", "CatBackward0"},       {"clamp", "ClampBackward1"},          {"norm", "LinalgVectorNormBackward0"},
      {"to", "ToCopyBackward0"},        {"narrow", "SliceBackward0"},         {"slice", "SliceBackward0"},
      {"rsub_scalar", "RsubBackward1"}, {"rdiv_scalar", "DivBackward0"},      {"pow_tensor", "PowBackward1"},
      {"copy_slices", "torch::autograd::CopySlices"}};
  for (const auto& [ours, torchs] : renamed)
    if (op == ours) return torchs;
  std::string base = op;
  if (base.ends_with("_scalar")) base.resize(base.size() - 7);  // add_scalar is torch's AddBackward0
  std::string out;
  bool upper = true;
  for (char c : base) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return out + "Backward0";
}

}  // namespace ag
