// oneDNN's matmul primitive as the native bf16 path's second interface (autograd/kernels/onednn.h:
// matmul_bf16; gemm_provider.h: Bf16Api). Results only, never speed: its products equal the exact
// product of the bf16 operands to float32's summation error (as the gemm API's do), and the
// float32 product to bf16's tolerance, for every transpose, leading dimensions wider than the
// matrix, alpha and beta; on the pool's threads; through kernels::gemm when chosen.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/kernels/bf16.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/kernels/onednn.h"
#include "autograd/parallel.h"

using namespace ag;
using kernels::Bf16Api;

namespace {

// Skips the test where the primitive cannot run, saying why.
#define SKIP_WITHOUT_MATMUL()                                                                  \
  do {                                                                                         \
    std::string why;                                                                           \
    if (!kernels::bf16_api_available(Bf16Api::Matmul, &why)) GTEST_SKIP() << "no matmul primitive: " << why; \
  } while (0)

// A problem C = alpha·op(A)·op(B) + beta·C with its operands stored at leading dimensions
// `pad` wider than tight, so that a product that read or wrote past its rows shows.
struct Problem {
  bool ta, tb;
  int64_t M, N, K, pad;
  float alpha, beta;
  int64_t lda() const { return (ta ? M : K) + pad; }
  int64_t ldb() const { return (tb ? K : N) + pad; }
  int64_t ldc() const { return N + pad; }
  int64_t a_rows() const { return ta ? K : M; }
  int64_t b_rows() const { return tb ? N : K; }
};

struct Data {
  std::vector<float> a, b;      // float32 values as stored (lda, ldb)
  std::vector<uint16_t> a16, b16;  // the same rounded to bf16 bits
  std::vector<float> c0;        // C before the product (ldc), the padding included
};

constexpr float kPadding = -777.0f;  // in C's padding columns: must stay as it is

Data make_data(const Problem& p, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  Data x;
  x.a.resize(static_cast<size_t>(p.a_rows() * p.lda()));
  x.b.resize(static_cast<size_t>(p.b_rows() * p.ldb()));
  for (float& v : x.a) v = d(rng);
  for (float& v : x.b) v = d(rng);
  for (float v : x.a) x.a16.push_back(kernels::bf16_bits(v));
  for (float v : x.b) x.b16.push_back(kernels::bf16_bits(v));
  x.c0.assign(static_cast<size_t>(p.M * p.ldc()), kPadding);
  for (int64_t r = 0; r < p.M; ++r)
    for (int64_t c = 0; c < p.N; ++c) x.c0[static_cast<size_t>(r * p.ldc() + c)] = d(rng);
  return x;
}

// op(A)[i][k] and op(B)[k][j] as stored.
float at_a(const Problem& p, const std::vector<float>& a, int64_t i, int64_t k) {
  return a[static_cast<size_t>(p.ta ? k * p.lda() + i : i * p.lda() + k)];
}
float at_b(const Problem& p, const std::vector<float>& b, int64_t k, int64_t j) {
  return b[static_cast<size_t>(p.tb ? j * p.ldb() + k : k * p.ldb() + j)];
}

// C as `run` leaves it, then each element checked against the product in double of `a`, `b`:
// within `tol` × (|alpha|·Σ|a·b| + |beta·c0|); the padding untouched.
void expect_product(const Problem& p, const Data& x, const std::vector<float>& a, const std::vector<float>& b,
                    double tol, const std::vector<float>& got, const std::string& what) {
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.N; ++j) {
      double sum = 0, scale = 0;
      for (int64_t k = 0; k < p.K; ++k) {
        const double t = static_cast<double>(at_a(p, a, i, k)) * at_b(p, b, k, j);
        sum += t, scale += std::fabs(t);
      }
      const double c0 = x.c0[static_cast<size_t>(i * p.ldc() + j)];
      const double want = p.alpha * sum + p.beta * c0;
      const double bound = tol * (std::fabs(p.alpha) * scale + std::fabs(p.beta * c0)) + 1e-30;
      const double g = got[static_cast<size_t>(i * p.ldc() + j)];
      ASSERT_LE(std::fabs(g - want), bound) << what << " at (" << i << ", " << j << ")";
    }
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = p.N; j < p.ldc(); ++j)
      ASSERT_EQ(got[static_cast<size_t>(i * p.ldc() + j)], kPadding) << what << ": wrote C's padding";
}

std::vector<float> run_matmul(const Problem& p, const Data& x) {
  std::vector<float> c = x.c0;
  kernels::onednn::matmul_bf16(p.ta, p.tb, p.M, p.N, p.K, p.alpha, x.a16.data(), p.lda(), x.b16.data(), p.ldb(), p.beta,
                               c.data(), p.ldc());
  return c;
}

std::vector<float> run_gemm_api(const Problem& p, const Data& x) {
  std::vector<float> c = x.c0;
  kernels::onednn::gemm_bf16(p.ta, p.tb, p.M, p.N, p.K, p.alpha, x.a16.data(), p.lda(), x.b16.data(), p.ldb(), p.beta,
                             c.data(), p.ldc());
  return c;
}

std::vector<float> bits_to_values(const std::vector<uint16_t>& bits) {
  std::vector<float> v;
  for (uint16_t b : bits) v.push_back(kernels::bf16_to_float(b));
  return v;
}

// float32 summation of K products (exact in float32: a bf16 times a bf16): at most K roundings
// of relative size 2⁻²⁴ each, plus alpha's and beta's.
double float32_sum_tolerance(int64_t K) { return static_cast<double>(K + 3) * 0x1p-24; }
// The float32 product against the rounded operands' one: each operand within 2⁻⁹ of its value.
constexpr double kBf16Tolerance = 3 * 0x1p-9;

std::vector<Problem> problems() {
  std::vector<Problem> out;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      // Tight and odd: the default model's linear and head, an attention tile, odd sizes; wider
      // leading dimensions (pad 3, 5); alpha ≠ 1 (attention's scale); beta 0, 1 and another.
      out.push_back({ta, tb, 96, 65, 128, 0, 1.0f, 0.0f});
      out.push_back({ta, tb, 64, 64, 32, 0, 0.125f, 0.0f});
      out.push_back({ta, tb, 33, 47, 129, 3, 1.0f, 1.0f});
      out.push_back({ta, tb, 1, 384, 128, 5, 1.0f, 0.0f});  // a decode step's row
      out.push_back({ta, tb, 17, 9, 5, 5, -0.5f, 0.25f});
    }
  return out;
}

}  // namespace

TEST(OneDnnMatmul, EqualsTheGemmApiAndFloat32ForEveryTransposeAndLeadingDimension) {
  SKIP_WITHOUT_MATMUL();
  unsigned seed = 1;
  for (const Problem& p : problems()) {
    const std::string what = std::string(p.ta ? "T" : "N") + (p.tb ? "T" : "N") + " " + std::to_string(p.M) + "x" +
                             std::to_string(p.N) + "x" + std::to_string(p.K) + " pad " + std::to_string(p.pad) +
                             " alpha " + std::to_string(p.alpha) + " beta " + std::to_string(p.beta);
    SCOPED_TRACE(what);
    const Data x = make_data(p, seed++);
    const std::vector<float> a_rounded = bits_to_values(x.a16), b_rounded = bits_to_values(x.b16);
    const double tol = float32_sum_tolerance(p.K);
    const std::vector<float> matmul = run_matmul(p, x), gemm = run_gemm_api(p, x);
    // Both interfaces: the exact product of the rounded operands, to float32's summation.
    expect_product(p, x, a_rounded, b_rounded, tol, matmul, "matmul primitive");
    expect_product(p, x, a_rounded, b_rounded, tol, gemm, "gemm API");
    // And the float32 operands' product, to bf16's tolerance.
    expect_product(p, x, x.a, x.b, kBf16Tolerance + tol, matmul, "matmul primitive against float32");
  }
}

TEST(OneDnnMatmul, KeepsAPrimitivePerShapeAlphaAndBetaAndRepeatsItsBits) {
  SKIP_WITHOUT_MATMUL();
  const Problem p{false, true, 40, 24, 56, 0, 1.0f, 0.0f};
  const Data x = make_data(p, 7);
  const int64_t before = kernels::onednn::matmul_bf16_kept_here();
  const std::vector<float> first = run_matmul(p, x);
  EXPECT_EQ(kernels::onednn::matmul_bf16_kept_here(), before + 1);
  EXPECT_EQ(run_matmul(p, x), first);  // the kept primitive: the same bits
  EXPECT_EQ(kernels::onednn::matmul_bf16_kept_here(), before + 1);
  // Another alpha or beta is another primitive (they are in its attributes), and is applied.
  Problem scaled = p;
  scaled.alpha = 2.0f;
  const std::vector<float> twice = run_matmul(scaled, x);
  EXPECT_EQ(kernels::onednn::matmul_bf16_kept_here(), before + 2);
  for (size_t i = 0; i < first.size(); ++i) ASSERT_EQ(twice[i], 2.0f * first[i]) << i;  // (a power of two: exact)
  Problem accumulating = p;
  accumulating.beta = 1.0f;
  expect_product(accumulating, x, bits_to_values(x.a16), bits_to_values(x.b16), float32_sum_tolerance(p.K),
                       run_matmul(accumulating, x), "beta 1");
}

// On the pool's threads, each with its own primitives, stream and scratchpad, as gemm_rows runs
// it. Where oneDNN uses AMX, the tiles need Linux's permission for the tile data state
// (arch_prctl, asked by oneDNN for the process): a thread without it would die of SIGILL here.
TEST(OneDnnMatmul, RunsOnThePoolsThreads) {
  SKIP_WITHOUT_MATMUL();
  if (parallel::num_threads() < 2) GTEST_SKIP() << "one thread: no pool";
  const Problem p{false, true, 256, 96, 64, 0, 1.0f, 0.0f};
  const Data x = make_data(p, 11);
  std::vector<float> c = x.c0;
  for (int round = 0; round < 3; ++round)
    parallel::parallel_for(p.M, 16, [&](int64_t r0, int64_t r1) {
      kernels::onednn::matmul_bf16(false, true, r1 - r0, p.N, p.K, 1.0f, x.a16.data() + r0 * p.lda(), p.lda(),
                                   x.b16.data(), p.ldb(), 0.0f, c.data() + r0 * p.ldc(), p.ldc());
    });
  expect_product(p, x, bits_to_values(x.a16), bits_to_values(x.b16), float32_sum_tolerance(p.K), c,
                       "on the pool");
}

// The tile path itself: where oneDNN's JIT targets AMX, its matmul primitive runs on the tiles.
TEST(OneDnnMatmul, RunsOnAmxTilesWhereOneDnnTargetsAmx) {
  SKIP_WITHOUT_MATMUL();
  const std::string isa = kernels::onednn::isa();
  if (isa.find("amx") == std::string::npos)
    GTEST_SKIP() << "oneDNN targets " << isa << " here, not AMX: no tiles to test";
  EXPECT_NE(kernels::onednn::matmul_bf16_kernel(64, 256, 256).find("amx"), std::string::npos)
      << kernels::onednn::matmul_bf16_kernel(64, 256, 256);
}

// kernels::gemm under bf16 autocast on oneDNN goes through the interface set: the primitive when
// Matmul (this thread keeps one more), the gemm API when Gemm (it keeps none more); the same
// product to float32's summation either way.
TEST(Bf16Api, AutocastGemmsGoThroughTheInterfaceSet) {
  SKIP_WITHOUT_MATMUL();
  const int64_t M = 24, N = 20, K = 72;  // small: one call on this thread, not split
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(N * K)), via_gemm(M * N), via_matmul(M * N);
  for (float& v : A) v = d(rng);
  for (float& v : B) v = d(rng);
  const kernels::GemmProviderGuard onednn(kernels::GemmProvider::OneDNN);
  const AutocastGuard bf16(Precision::BF16);
  ASSERT_EQ(kernels::bf16_api(), Bf16Api::Gemm);  // the default
  const int64_t kept = kernels::onednn::matmul_bf16_kept_here();
  kernels::gemm(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, via_gemm.data(), N);
  EXPECT_EQ(kernels::onednn::matmul_bf16_kept_here(), kept);
  {
    const kernels::Bf16ApiGuard matmul(Bf16Api::Matmul);
    kernels::gemm(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, via_matmul.data(), N);
    EXPECT_EQ(kernels::onednn::matmul_bf16_kept_here(), kept + 1);
  }
  EXPECT_EQ(kernels::bf16_api(), Bf16Api::Gemm);  // the guard restored it
  for (int64_t i = 0; i < M * N; ++i) {
    double scale = 0;
    for (int64_t k = 0; k < K; ++k)
      scale += std::fabs(kernels::round_to_bf16(A[static_cast<size_t>(i / N * K + k)]) *
                         kernels::round_to_bf16(B[static_cast<size_t>(i % N * K + k)]));
    EXPECT_LE(std::fabs(via_matmul[static_cast<size_t>(i)] - via_gemm[static_cast<size_t>(i)]),
              2 * float32_sum_tolerance(K) * scale)
        << i;
  }
}

TEST(Bf16Api, NamesAndAvailability) {
  EXPECT_STREQ(kernels::bf16_api_name(Bf16Api::Gemm), "gemm");
  EXPECT_STREQ(kernels::bf16_api_name(Bf16Api::Matmul), "matmul");
  std::string why;
  if (!kernels::bf16_api_available(Bf16Api::Matmul, &why)) {
    EXPECT_FALSE(why.empty());
    EXPECT_THROW(kernels::set_bf16_api(Bf16Api::Matmul), std::invalid_argument);
  }
  EXPECT_NO_THROW(kernels::set_bf16_api(Bf16Api::Gemm));  // the default: settable anywhere
}
