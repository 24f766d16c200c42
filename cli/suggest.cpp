#include "cli/suggest.h"

#include <algorithm>

namespace ag::cli {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // d[i][j] = distance(a[0:i], b[0:j]), rows kept whole: names are short.
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])  // "trian" -> "train"
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string closest_name(const std::string& typed, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = 0;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(typed, c);
    const std::size_t allowed = std::max<std::size_t>(1, std::max(typed.size(), c.size()) / 3);
    if (d <= allowed && (best.empty() || d < best_distance)) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace ag::cli
