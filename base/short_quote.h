// Quoting untrusted text (from a file or a flag) inside an error message. A message is one
// line a person reads: a 20 KB tensor name or a JSON error quoting half a header would bury
// the point, and control characters (newlines, escape sequences) must not reach a terminal.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

namespace ag {

// At most `max` bytes of `text`, with control bytes and backslashes escaped (\n, \x1b, ...),
// followed by "... (N bytes)" when it was cut. Quote marks are the caller's choice.
inline std::string short_quote(std::string_view text, size_t max = 60) {
  std::string out;
  size_t shown = text.size() <= max ? text.size() : max;
  // Cut on a UTF-8 character boundary, never inside a multi-byte character.
  while (shown > 0 && shown < text.size() && (static_cast<unsigned char>(text[shown]) & 0xC0) == 0x80) --shown;
  for (size_t i = 0; i < shown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (shown < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace ag
