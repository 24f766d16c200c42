// Build-time generator of the table of backward formulas (viz/backward_formulas.h): one entry
// per record() call in the op sources, with the comment that states that op's backward, as the
// source has it. The comment in the source stays the one place the formula is written; the
// table is derived from it at every build, so the two cannot drift apart.
//
//   backward_formulas SOURCE_ROOT OUT.inc FILE.cpp...
//
// For a record(...) call on line N of FILE, the formula is, in order of preference:
//   1. the comment block holding "=>" just above the call (the lines up to the call, skipping an
//      `if (should_record(...))` line) or at the top of its backward lambda, with the comment
//      lines that continue it ("out = a @ b  =>  da = g @ bᵀ, db = aᵀ @ g");
//   2. a one-line backward's code ("return Grads{neg(g)};"), shown as code;
//   3. the nearest "=>" comment block above the call in the same file (sdpa's derivation at
//      the top of its backward helpers), with its own line number.
// Each entry: {file relative to SOURCE_ROOT, line of the call, formula text, kind, line of the text}.
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}
bool is_comment(const std::string& line) { return trim(line).rfind("//", 0) == 0; }
std::string comment_text(const std::string& line) { return trim(trim(line).substr(2)); }

// The comment block that contains line i (a comment line), from its "=>" line to its end.
std::string block_from(const std::vector<std::string>& lines, size_t i) {
  std::string text = comment_text(lines[i]);
  for (size_t j = i + 1; j < lines.size() && is_comment(lines[j]); ++j) text += "\n" + comment_text(lines[j]);
  return text;
}

struct Entry {
  std::string file;
  size_t line = 0;
  std::string text;
  int kind = 0;  // 0 comment at the call, 1 code, 2 comment elsewhere in the file
  size_t text_line = 0;
};

// True when the line calls `record(` (not `should_record(` or another name ending in it).
// Plain string search, not std::regex: GCC 12's regex headers warn (-Wmaybe-uninitialized)
// under the sanitizer build.
bool calls_record(const std::string& line) {
  for (size_t at = line.find("record("); at != std::string::npos; at = line.find("record(", at + 1))
    if (at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_')) return true;
  return false;
}

size_t skip_spaces(const std::string& s, size_t at) {
  while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at]))) ++at;
  return at;
}

// A one-line backward `(const Tensor& g) { return EXPR; });`: its `return EXPR;`, or "".
std::string one_line_backward(const std::string& line) {
  const std::string head = "(const Tensor& ";
  for (size_t at = line.find(head); at != std::string::npos; at = line.find(head, at + 1)) {
    size_t k = at + head.size();
    const size_t name = k;
    while (k < line.size() && std::islower(static_cast<unsigned char>(line[k]))) ++k;
    if (k == name || k >= line.size() || line[k] != ')') continue;
    k = skip_spaces(line, k + 1);
    if (k >= line.size() || line[k] != '{') continue;
    k = skip_spaces(line, k + 1);
    if (line.compare(k, 7, "return ") != 0) continue;
    const size_t semi = line.find(';', k);
    if (semi == std::string::npos) continue;
    size_t tail = skip_spaces(line, semi + 1);
    if (tail >= line.size() || line[tail] != '}') continue;
    tail = skip_spaces(line, tail + 1);
    if (line.compare(tail, 2, ");") != 0) continue;
    return line.substr(k, semi + 1 - k);
  }
  return "";
}

std::vector<Entry> scan(const std::string& rel, const std::vector<std::string>& lines) {
  std::vector<Entry> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (is_comment(line) || !calls_record(line)) continue;
    Entry e{rel, i + 1, "", 0, 0};
    // 1a. Comments just above the call (over a `if (should_record(...))` line).
    size_t above = i;
    while (above > 0 && trim(lines[above - 1]).rfind("if (should_record", 0) == 0) --above;
    size_t first = above;
    while (first > 0 && is_comment(lines[first - 1])) --first;
    for (size_t j = first; j < above && e.text.empty(); ++j)
      if (lines[j].find("=>") != std::string::npos) e.text = block_from(lines, j), e.text_line = j + 1;
    // 1b. The comment block at the top of the backward lambda.
    if (e.text.empty()) {
      size_t j = i;
      while (j < lines.size() && j < i + 8 && lines[j].find("(const Tensor& g") == std::string::npos &&
             lines[j].find("(const Tensor& G") == std::string::npos)
        ++j;
      for (size_t k = j + 1; k < lines.size() && is_comment(lines[k]); ++k)
        if (lines[k].find("=>") != std::string::npos) {
          e.text = block_from(lines, k), e.text_line = k + 1;
          break;
        }
    }
    // 2. A one-line backward.
    if (e.text.empty()) {
      const std::string one = one_line_backward(line);
      if (!one.empty()) e.text = one, e.kind = 1, e.text_line = i + 1;
    }
    // 3. The nearest derivation above, in the same file.
    for (size_t j = i; e.text.empty() && j-- > 0;)
      if (is_comment(lines[j]) && lines[j].find("=>") != std::string::npos)
        e.text = block_from(lines, j), e.kind = 2, e.text_line = j + 1;
    out.push_back(e);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: backward_formulas SOURCE_ROOT OUT.inc FILE.cpp...\n");
    return 2;
  }
  const std::string root = std::string(argv[1]) + "/";
  std::vector<Entry> all;
  for (int a = 3; a < argc; ++a) {
    std::string path = argv[a];
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "backward_formulas: %s: cannot open\n", path.c_str());
      return 1;
    }
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    const std::string rel = path.rfind(root, 0) == 0 ? path.substr(root.size()) : path;
    for (auto& e : scan(rel, lines)) all.push_back(std::move(e));
  }
  std::ofstream out(argv[2], std::ios::trunc);
  out << "// Generated by tools/backward_formulas.cpp from the op sources at build time; do not edit.\n";
  for (const Entry& e : all) {
    if (e.text.find(")attograd\"") != std::string::npos) {
      std::fprintf(stderr, "backward_formulas: %s:%zu: the comment contains the raw-string delimiter\n", e.file.c_str(), e.line);
      return 1;
    }
    out << "{\"" << e.file << "\", " << e.line << ", R\"attograd(" << e.text << ")attograd\", " << e.kind << ", " << e.text_line
        << "},\n";
  }
  if (!out.flush()) {
    std::fprintf(stderr, "backward_formulas: %s: cannot write\n", argv[2]);
    return 1;
  }
  return 0;
}
