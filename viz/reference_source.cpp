#include "viz/reference_source.h"

#include <stdexcept>

namespace ag::viz {

namespace {

struct EmbeddedFile {
  const char* path;
  const char* text;
};
const EmbeddedFile kReferenceFiles[] = {
#include "reference_source.inc"
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    lines.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return lines;
}

// "// ---- NAME ----...": NAME, or "" for any other line.
std::string header_name(const std::string& line) {
  const std::string open = "// ---- ";
  if (line.rfind(open, 0) != 0) return "";
  const size_t end = line.find(" --", open.size());
  return end == std::string::npos ? "" : line.substr(open.size(), end - open.size());
}

std::vector<ReferenceSection> parse() {
  std::vector<ReferenceSection> sections;
  for (const EmbeddedFile& f : kReferenceFiles) {
    const std::vector<std::string> lines = lines_of(f.text);
    auto close = [&](size_t end) {  // the open section ends before line index `end`
      if (sections.empty() || sections.back().file != f.path || sections.back().last_line != 0) return;
      ReferenceSection& s = sections.back();
      size_t last = end;
      while (last > static_cast<size_t>(s.first_line) && lines[last - 1].find_first_not_of(' ') == std::string::npos) --last;
      s.last_line = static_cast<int>(last);
      for (size_t i = static_cast<size_t>(s.first_line) - 1; i < last; ++i) s.text += lines[i] + "\n";
    };
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string name = header_name(lines[i]);
      const bool namespace_end = lines[i].rfind("}  // namespace", 0) == 0;
      if (!name.empty() || namespace_end) close(i);
      if (!name.empty()) sections.push_back({name, f.path, static_cast<int>(i) + 1, 0, ""});
    }
    close(lines.size());
  }
  return sections;
}

}  // namespace

std::string ReferenceSection::at() const {
  return file + ":" + std::to_string(first_line) + "-" + std::to_string(last_line);
}
std::string ReferenceLine::at() const { return file + ":" + std::to_string(line); }

const std::vector<ReferenceSection>& reference_sections() {
  static const std::vector<ReferenceSection> sections = parse();
  return sections;
}

const ReferenceSection* reference_section(std::string_view name) {
  for (const ReferenceSection& s : reference_sections())
    if (s.name == name) return &s;
  return nullptr;
}

ReferenceLine reference_line(std::string_view section, std::string_view marker) {
  const ReferenceSection* s = reference_section(section);
  if (!s) throw std::logic_error("the reference has no section '" + std::string(section) + "'");
  const std::vector<std::string> lines = lines_of(s->text);
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find(marker) != std::string::npos) {
      const size_t from = lines[i].find_first_not_of(' ');
      return {s->name, s->file, s->first_line + static_cast<int>(i), lines[i].substr(from == std::string::npos ? 0 : from)};
    }
  throw std::logic_error("the reference's section '" + std::string(section) + "' has no line with '" + std::string(marker) + "'");
}

const std::vector<OpReference>& op_references() {
  static const std::vector<OpReference> table = {
      {"matmul", "matmul"},
      {"linear", "linear"},
      {"add", "add"},
      {"mul_scalar", "scale"},
      {"transpose", "transpose"},
      {"permute", "transpose"},  // the model's permutes swap two dims
      {"reshape", "reshape"},
      {"view", "reshape"},
      {"squeeze", "reshape"},
      {"unsqueeze", "reshape"},
      {"narrow", "narrow"},
      {"gelu", "gelu"},
      {"gelu_mlp", "gelu"},  // proj(gelu(fc(x))): linear, gelu, linear in the reference
      {"masked_fill", "masked_fill"},
      {"softmax", "softmax"},
      {"layer_norm", "layer_norm"},
      {"embedding", "embedding"},
      {"cross_entropy", "cross_entropy"},
      {"attention_probs", "attention"},
      {"scaled_dot_product_attention", "attention"},
      {"self_attention_qkv", "attention"},
  };
  return table;
}

const ReferenceSection* reference_section_for_op(std::string_view op) {
  for (const OpReference& r : op_references())
    if (op == r.op) return reference_section(r.section);
  return nullptr;
}

}  // namespace ag::viz
