// The reference core's own text (reference/: autograd and the character GPT in plain loops),
// embedded at build time (cmake/embed_reference.cmake), so that the study tools show the lines
// of the reference that compute what they display: `explain attention` each step's, `explore`
// each node's op. The reference's source stays the one place those lines are written.
//
// A section of the reference starts at a header comment "// ---- NAME ----..." (the formula
// block follows it) and runs to the next header or the end of its namespace.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ag::viz {

struct ReferenceSection {
  std::string name;  // "matmul", "softmax", "the walk"
  std::string file;  // "reference/tensor.cpp"
  int first_line = 0, last_line = 0;  // 1-based, inclusive: the header to the last non-blank line
  std::string text;  // those lines
  std::string at() const;  // "reference/ops.cpp:153-175"
};

struct ReferenceLine {
  std::string section;  // "matmul"
  std::string file;     // "reference/tensor.cpp"
  int line = 0;         // 1-based
  std::string text;     // the line, without its leading spaces
  std::string at() const;  // "reference/tensor.cpp:163"
};

// Every section of every reference file, in file and line order.
const std::vector<ReferenceSection>& reference_sections();
const ReferenceSection* reference_section(std::string_view name);  // null if there is none
// The first line of section `section` that contains `marker`; throws std::logic_error naming
// both when there is none (a test holds every marker the tools use to the reference).
ReferenceLine reference_line(std::string_view section, std::string_view marker);
// The section that computes engine op `op` (a node's op name): "softmax" for softmax, "attention"
// for attention_probs, scaled_dot_product_attention and self_attention_qkv, ...; null for an op
// the reference does not have.
const ReferenceSection* reference_section_for_op(std::string_view op);
// The table behind it: {engine op, reference section}.
struct OpReference {
  const char* op;
  const char* section;
};
const std::vector<OpReference>& op_references();

}  // namespace ag::viz
