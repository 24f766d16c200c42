#include "models/language_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

namespace ag::models {

int64_t sample_token(const std::vector<double>& logits, double temperature, int64_t top_k, Generator& gen) {
  const int64_t V = static_cast<int64_t>(logits.size());
  if (temperature <= 0) return std::max_element(logits.begin(), logits.end()) - logits.begin();
  std::vector<double> l(logits);
  for (double& v : l) v /= temperature;
  if (top_k > 0 && top_k < V) {
    std::vector<double> sorted(l);
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<>());
    const double kth = sorted[top_k - 1];
    for (double& v : l)
      if (v < kth) v = -std::numeric_limits<double>::infinity();
  }
  const double m = *std::max_element(l.begin(), l.end());
  double s = 0;
  for (double& v : l) s += (v = std::exp(v - m));
  double u = gen.uniform() * s;
  for (int64_t i = 0; i < V; ++i) {
    u -= l[i];
    if (u < 0) return i;
  }
  for (int64_t i = V - 1; i >= 0; --i)  // rounding left u ≥ 0: the last token with mass
    if (l[i] > 0) return i;
  return V - 1;
}

void check_prompt(const std::vector<int64_t>& prompt, int64_t vocab_size) {
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt must hold at least one token");
  for (int64_t t : prompt)
    if (t < 0 || t >= vocab_size)
      throw std::invalid_argument("generate: token id " + std::to_string(t) + " outside the vocabulary of " +
                                  std::to_string(vocab_size));
}

}  // namespace ag::models
