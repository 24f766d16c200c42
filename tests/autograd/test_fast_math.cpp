// The vectorisable float32 exp/erfc kernels against libm (reference beside the fast kernel).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "autograd/kernels/fast_math.h"

using ag::kernels::erfc_f32;
using ag::kernels::exp_f32;
using ag::kernels::exp_f32_nonpositive;

TEST(FastMath, ExpWithinTwoUlpOfLibm) {
  double worst = 0;
  for (float x = -87.0f; x < 88.5f; x += 0.001953125f) {
    const double ref = std::exp(static_cast<double>(x));
    const double rel = std::fabs(exp_f32(x) - ref) / ref;
    worst = std::max(worst, rel);
  }
  EXPECT_LT(worst, 2.5e-7);  // 2 ulp of float is 2.4e-7 at worst
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-INFINITY), 0.0f);  // masked scores give exactly 0
  EXPECT_EQ(exp_f32(-100.0f), 0.0f);
  EXPECT_EQ(exp_f32(100.0f), INFINITY);
  EXPECT_TRUE(std::isnan(exp_f32(NAN)));
}

// The softmax's and GELU's exp (arguments never positive) against exp_f32 itself, bit for bit,
// over a spread of every float from −inf to 88 (the two differ only in how they scale by 2^n).
TEST(FastMath, ExpOfNonpositiveGivesTheBitsOfExpUpTo88) {
  auto bits = [](float f) { return std::bit_cast<uint32_t>(f); };
  int64_t checked = 0;
  // Negative floats: bit patterns 0x80000000 (−0) up to 0xff800000 (−inf).
  for (uint64_t u = 0x80000000u; u <= 0xff800000u; u += 1009) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(u));
    ASSERT_EQ(bits(exp_f32_nonpositive(x)), bits(exp_f32(x))) << "x = " << x;
    ++checked;
  }
  for (uint32_t u = 0; std::bit_cast<float>(u) <= 88.0f; u += 1009) {
    const float x = std::bit_cast<float>(u);
    ASSERT_EQ(bits(exp_f32_nonpositive(x)), bits(exp_f32(x))) << "x = " << x;
    ++checked;
  }
  for (float x : {-INFINITY, -87.33654f, -87.33655f, -87.0f, -0.0f, 0.0f, 1e-30f, 87.9f, 88.0f})
    EXPECT_EQ(bits(exp_f32_nonpositive(x)), bits(exp_f32(x))) << "x = " << x;
  EXPECT_TRUE(std::isnan(exp_f32_nonpositive(NAN)));
  EXPECT_GT(checked, 3'000'000);
}

TEST(FastMath, ErfcRelativeErrorIsSmall) {
  double worst_core = 0, worst_tail = 0;
  for (float x = -6.0f; x < 9.0f; x += 0.0009765625f) {
    const double ref = std::erfc(static_cast<double>(x));
    if (ref < 1e-30) continue;
    const double rel = std::fabs(erfc_f32(x) - ref) / ref;
    (std::fabs(x) < 3 ? worst_core : worst_tail) = std::max(std::fabs(x) < 3 ? worst_core : worst_tail, rel);
  }
  EXPECT_LT(worst_core, 1e-6);
  EXPECT_LT(worst_tail, 1e-5);
  EXPECT_EQ(erfc_f32(-INFINITY), 2.0f);
  EXPECT_EQ(erfc_f32(INFINITY), 0.0f);
}

TEST(FastMath, ErfcxPolynomialInTIsWithinAFewUlpOfLibm) {
  // erfcx_of_t(1/(1 + z/2)) = erfc(z)·exp(z²) over the z the bf16 GELU reaches before exp(−z²)
  // underflows (|x| up to 14, so z up to 10); a wrong coefficient is far off (1e-3 and more).
  double worst = 0;
  for (float z = 0.0f; z <= 10.0f; z += 0.0009765625f) {
    const double zd = z, ref = std::erfc(zd) * std::exp(zd * zd);
    const float t = 1.0f / (1.0f + 0.5f * z);
    worst = std::max(worst, std::fabs(ag::kernels::erfcx_of_t(t) - ref) / ref);
  }
  EXPECT_LT(worst, 3e-7);
}
