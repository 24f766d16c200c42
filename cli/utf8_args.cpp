#include "cli/utf8_args.h"

#include <cstdio>

namespace ag::cli {

namespace {
// The length of the well-formed UTF-8 sequence at s[i], or 0 when there is none.
size_t sequence_at(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC) n = 3;
  else if (c == 0xED) n = 3, hi = 0x9F;  // no surrogates
  else if (c >= 0xEE && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, hi = 0x8F;  // nothing beyond U+10FFFF
  else return 0;
  if (i + n > s.size() || b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}
}  // namespace

std::optional<size_t> first_non_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_at(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::nullopt;
}

std::string shown_with_escapes(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_at(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(s[i]));
      out += buf;
      ++i;
    }
  }
  return out;
}

std::string non_utf8_argument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const auto bad = first_non_utf8(a);
    if (!bad) continue;
    std::string name, value(a);
    const auto eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string_view::npos && eq < *bad) {
      name = std::string(a.substr(0, eq)), value = std::string(a.substr(eq + 1));
    } else if (i > 1 && argv[i - 1][0] == '-' && argv[i - 1][1] != '\0') {
      name = argv[i - 1];
    } else {
      name = "argument " + std::to_string(i);
    }
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(a[*bad]));
    return name + ": '" + shown_with_escapes(value) + "' is not UTF-8 text (byte " + byte +
           "); attograd writes names and text into JSON, TOML, TensorBoard and HTML files, which hold UTF-8 only: "
           "rename the file, or give the text, in UTF-8";
  }
  return "";
}

}  // namespace ag::cli
