// Rendering DOT files with Graphviz's `dot` program (Debian package graphviz), when present.
// It is optional: without it `attograd graph` still writes the .dot file.
#pragma once
#include <string>

namespace ag::viz {

// The path of `dot` on PATH, or "" when it is not installed.
std::string find_dot();

// Runs `dot -T<format> dot_file -o out_file` (no shell). Throws std::runtime_error when dot
// cannot be started or exits with a non-zero status.
void render_dot(const std::string& dot_program, const std::string& dot_file, const std::string& out_file,
                const std::string& format);

}  // namespace ag::viz
