// Anomaly mode names the user's line: the stack of the forward call that made the op a NaN or
// an infinity came from, as PyTorch prints the Python traceback of the forward call. These
// lines are the "user's code" here: the message must name this file and the line.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/function.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::error_of;
using ag::testing_util::leaf;

namespace {

std::string at_line(int line) { return "tests/autograd/test_anomaly.cpp:" + std::to_string(line); }

// Not inlined, so that the stack has this function's frame and its caller's.
[[gnu::noinline]] Tensor log_of(const Tensor& x, int* line) {
  Tensor y = log(x); *line = __LINE__;
  return y;
}

struct Reciprocal : autograd::Function<Reciprocal> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return 1.0 / x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const Tensor x = ctx->get_saved_variables()[0];
    return {-g[0] / (x * x)};
  }
};

}  // namespace

TEST(AnomalyStack, ANaNBornOnALineOfThisFileIsReportedWithThatLine) {
  Tensor x = leaf({0.0, 1.0});
  std::string msg;
  int line = 0;
  {
    DetectAnomalyGuard anomaly;
    Tensor y = sqrt(x); line = __LINE__;  // d√x/dx at 0 is inf
    msg = error_of([&] { sum(y).backward(); });
  }
  EXPECT_NE(msg.find("'sqrt'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(at_line(line)), std::string::npos) << msg;
  // The frames shown are the user's: none of attograd's autograd/ sources among them (this
  // file's own folder, tests/autograd/, is the user's).
  const size_t begin = msg.find("most recent call first):\n"), end = msg.find("(the op itself: ");
  ASSERT_NE(begin, std::string::npos) << msg;
  ASSERT_NE(end, std::string::npos) << msg;
  std::string frames = msg.substr(begin, end - begin);
  for (size_t at; (at = frames.find("tests/autograd/")) != std::string::npos;) frames.erase(at + 6, 9);  // → tests/
  EXPECT_EQ(frames.find("/autograd/"), std::string::npos) << msg;
}

TEST(AnomalyStack, ACustomFunctionIsNamedAtTheLineThatAppliedIt) {
  Tensor x = leaf({0.0, 2.0});
  std::string msg;
  int line = 0;
  {
    DetectAnomalyGuard anomaly;
    Tensor y = Reciprocal::apply(x); line = __LINE__;  // 1/x at 0: inf, and its gradient −1/x² too
    msg = error_of([&] { sum(y).backward(); });
  }
  EXPECT_NE(msg.find("Reciprocal"), std::string::npos) << msg;
  EXPECT_NE(msg.find(at_line(line)), std::string::npos) << msg;
}

TEST(AnomalyStack, BothFramesOfANestedCall) {
  Tensor x = leaf({0.0, 2.0});
  int inner = 0, outer = 0;
  std::string msg;
  {
    DetectAnomalyGuard anomaly;
    Tensor y = log_of(x, &inner); outer = __LINE__;  // d log(x)/dx at 0: inf
    msg = error_of([&] { sum(y).backward(); });
  }
  const size_t a = msg.find(at_line(inner)), b = msg.find(at_line(outer));
  ASSERT_NE(a, std::string::npos) << msg;
  ASSERT_NE(b, std::string::npos) << msg;
  EXPECT_LT(a, b) << "most recent call first: " << msg;
}

TEST(AnomalyStack, NothingIsCapturedOutsideTheGuard) {
  Tensor x = leaf({1.0});
  Tensor y = sqrt(x);
  EXPECT_EQ(y.grad_fn()->forward_stack, nullptr);
  EXPECT_TRUE(y.grad_fn()->anomaly_trace.empty());
  DetectAnomalyGuard anomaly;
  Tensor z = sqrt(x);
  EXPECT_NE(z.grad_fn()->forward_stack, nullptr);
}
