#include "viz/html_escape.h"

namespace ag::viz {

std::string html_text(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string json_for_script(std::string_view json) {
  std::string o;
  o.reserve(json.size());
  for (char c : json) {
    switch (c) {
      case '<': o += "\\u003c"; break;
      case '>': o += "\\u003e"; break;
      case '&': o += "\\u0026"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace ag::viz
