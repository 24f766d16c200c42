#include "train/logging/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace ag::train {

std::string format_duration(double s) {
  char buf[32];
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", static_cast<long>(t / 3600), static_cast<long>(t % 3600 / 60));
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", static_cast<long>(t / 60), static_cast<long>(t % 60));
  return buf;
}

std::string progress_line(const Progress& p, int columns) {
  const int room = std::max(columns - 1, 1);
  constexpr int kMinBar = 8, kMaxBar = 40;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%ld/%ld", static_cast<long>(p.done), static_cast<long>(p.total));
  const std::string counter = buf;
  // The optional fields, in the order they are shown; `drop` is the order they go in.
  struct Field {
    std::string text;
    int drop;
  };
  std::vector<Field> fields;
  std::snprintf(buf, sizeof buf, "loss %.4f", p.loss);
  fields.push_back({buf, 3});
  std::snprintf(buf, sizeof buf, "lr %.2e", p.lr);
  fields.push_back({buf, 1});
  if (p.tokens_per_s > 0) {
    if (p.ms_per_step > 0) {
      std::snprintf(buf, sizeof buf, "%.1f ms/step", p.ms_per_step);
      fields.push_back({buf, 0});
    }
    std::snprintf(buf, sizeof buf, "%.0f tok/s", p.tokens_per_s);
    fields.push_back({buf, 2});
    if (p.mfu > 0) {
      std::snprintf(buf, sizeof buf, "mfu %.0f%%", 100 * p.mfu);
      fields.push_back({buf, 0});
    }
    fields.push_back({"ETA " + format_duration(p.eta_s), 4});
  }
  auto text = [&] {
    std::string t = counter;
    for (const Field& f : fields) t += "  " + f.text;
    return t;
  };
  std::string t = text();
  // Drop fields (never the counter or the ETA) until a bar of kMinBar fits beside the text.
  for (int d = 0; d < 4 && static_cast<int>(t.size()) + 3 + kMinBar > room; ++d) {
    fields.erase(std::remove_if(fields.begin(), fields.end(), [d](const Field& f) { return f.drop == d; }), fields.end());
    t = text();
  }
  const int bar = std::min(kMaxBar, room - static_cast<int>(t.size()) - 3);  // "[" bar "] "
  std::string line;
  if (bar >= kMinBar) {
    const int filled = p.total > 0 ? static_cast<int>(bar * std::clamp(static_cast<double>(p.done) / p.total, 0.0, 1.0)) : 0;
    line = "[" + std::string(filled, '#') + std::string(bar - filled, '.') + "] ";
  }
  line += t;
  if (static_cast<int>(line.size()) > room) line.resize(room);
  return line;
}

int terminal_columns(int fd) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long n = std::strtol(c, &end, 10);
    if (end != c && *end == '\0' && n > 0 && n < 100000) return static_cast<int>(n);
  }
  return 80;
}

}  // namespace ag::train
