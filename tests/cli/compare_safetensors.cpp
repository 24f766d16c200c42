// compare_safetensors [--atol A] [--rtol R] ACTUAL EXPECTED
//
// Test helper for tests/cli.cmake: checks that two safetensors files hold the same tensor
// names, dtypes and shapes, and that for each tensor max|actual − expected| ≤ A + R·max|expected|
// (the norm-wise criterion of tests/nn/test_attention_parity.cpp; NaN never passes). Tolerances
// default to 0, i.e. bitwise-equal values. __metadata__ is ignored.
// Prints one line per tensor. Exit status: 0 all match, 1 a difference, 2 bad arguments or
// an unreadable file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "autograd/safetensors.h"

namespace {

int usage(const char* why) {
  std::fprintf(stderr, "compare_safetensors: %s\nusage: compare_safetensors [--atol A] [--rtol R] ACTUAL EXPECTED\n", why);
  return 2;
}

bool parse_tolerance(const char* text, double& out) {
  char* end = nullptr;
  out = std::strtod(text, &end);
  return end != text && *end == '\0' && out >= 0 && std::isfinite(out);
}

// Compares one tensor; returns true when it matches.
bool compare(const std::string& name, const ag::Tensor& a, const ag::Tensor& b, double atol, double rtol) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    std::printf("%-24s DIFF  actual %s, expected %s\n", name.c_str(), ag::describe(a).c_str(), ag::describe(b).c_str());
    return false;
  }
  const auto x = a.to_double_vector(), y = b.to_double_vector();
  double max_err = 0, scale = 0;
  bool nan = false;
  for (size_t i = 0; i < x.size(); ++i) {
    const double err = std::fabs(x[i] - y[i]);
    nan = nan || std::isnan(err);
    max_err = std::max(max_err, err);
    scale = std::max(scale, std::fabs(y[i]));
  }
  const double bound = atol + rtol * scale;
  const bool ok = !nan && max_err <= bound;
  std::printf("%-24s %-4s  %-22s max abs err %.3e  bound %.3e%s\n", name.c_str(), ok ? "OK" : "DIFF",
              ag::describe(a).c_str(), max_err, bound, nan ? "  (NaN)" : "");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  double atol = 0, rtol = 0;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--atol" || arg == "--rtol") {
      if (i + 1 == argc || !parse_tolerance(argv[i + 1], arg == "--atol" ? atol : rtol))
        return usage((arg + " needs a non-negative number").c_str());
      ++i;
    } else {
      files.push_back(arg);
    }
  }
  if (files.size() != 2) return usage("give exactly two files");
  try {
    const auto actual = ag::SafeTensorsFile::load(files[0]);
    const auto expected = ag::SafeTensorsFile::load(files[1]);
    bool ok = true;
    for (const auto& name : expected.names()) {
      if (!actual.has(name)) {
        std::printf("%-24s DIFF  missing from %s\n", name.c_str(), files[0].c_str());
        ok = false;
      } else {
        ok = compare(name, actual.get(name), expected.get(name), atol, rtol) && ok;
      }
    }
    for (const auto& name : actual.names())
      if (!expected.has(name)) {
        std::printf("%-24s DIFF  not in %s\n", name.c_str(), files[1].c_str());
        ok = false;
      }
    std::printf("%s\n", ok ? "same" : "different");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compare_safetensors: %s\n", e.what());
    return 2;
  }
}
