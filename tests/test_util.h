// Small helpers shared by the test files.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/tensor.h"

namespace ag::testing_util {

// max |a − b| / (1 + |b|) over all elements: a relative error that stays finite near zero.
inline double max_rel(const Tensor& a, const Tensor& b) {
  const auto va = a.to_double_vector(), vb = b.to_double_vector();
  EXPECT_EQ(va.size(), vb.size());
  double w = 0;
  for (size_t i = 0; i < va.size(); ++i) w = std::max(w, std::fabs(va[i] - vb[i]) / (1 + std::fabs(vb[i])));
  return w;
}

// A float64 leaf that requires grad (gradient checks run in float64); 1-d unless a shape is given.
inline Tensor leaf(const std::vector<double>& values, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  return Tensor::from_vector(values, shape, DType::Float64).requires_grad_();
}

// Removes the folders temp_dir() made during a test when the test ends, unless it failed (a
// failing test's are kept to be looked at). Without it, every `make test` left some 60 folders, up to
// 1.2 MB each, in the temp folder.
class TempDirRemover : public ::testing::EmptyTestEventListener {
 public:
  static TempDirRemover& registered() {  // appended to gtest's listeners once, which then owns it
    static TempDirRemover* r = [] {
      auto* l = new TempDirRemover;
      ::testing::UnitTest::GetInstance()->listeners().Append(l);
      return l;
    }();
    return *r;
  }
  void add(const std::filesystem::path& d) { dirs_.push_back(d); }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    namespace fs = std::filesystem;
    if (info.result() && !info.result()->Failed())
      for (const fs::path& d : dirs_) {
        std::error_code ec;
        fs::permissions(d, fs::perms::owner_all, fs::perm_options::add, ec);  // in case a test made it read-only
        fs::remove_all(d, ec);
      }
    dirs_.clear();
  }

 private:
  std::vector<std::filesystem::path> dirs_;
};

// A fresh, empty scratch folder under the system temp folder, unique to this process; removed
// when the test ends, unless it failed.
inline std::filesystem::path temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path d = fs::temp_directory_path() / ("attograd_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  TempDirRemover::registered().add(d);
  return d;
}

// Runs f, expects an exception of type E, and returns its message (a test failure otherwise).
template <class E = std::runtime_error, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

// Expects every one of parts in msg (an error message), naming the missing one.
inline void expect_has(const std::string& msg, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::vector<std::string> read_lines(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Sets (or, with nullptr, clears) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { old_ ? setenv(name_, old_->c_str(), 1) : unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace ag::testing_util
