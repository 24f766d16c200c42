// The GEMM providers (autograd/kernels/gemm_provider.h) and the bf16 GEMM path of autocast
// (autograd/autocast.h): oneDNN's products equal OpenBLAS's at the shapes of a training step,
// bf16 rounding is round-to-nearest-even, and a GEMM under autocast equals sgemm of its
// operands rounded to bf16 whichever path runs it.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sys/time.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "autograd/async_signals.h"
#include "autograd/autocast.h"
#include "autograd/buffer_cache.h"
#include "autograd/kernels/bf16.h"
#include "autograd/kernels/bf16_matrix.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/kernels/onednn.h"
#include "autograd/parallel.h"

using namespace ag;
using kernels::GemmProvider;

namespace {

struct Shape3 {
  bool ta, tb;
  int64_t M, N, K;
};

// The GEMMs of one training step of the default config (batch 12 × block 64 = 768 rows, 128
// wide, 4 heads of 32, vocabulary 65) and of the large one (16 × 256 = 4096 rows, 384 wide, 6
// heads of 64): linear forward x·Wᵀ, its backward g·W and gᵀ·x, the MLP's 4E, the tied head,
// and attention's tiles (q·kᵀ, p·v, and the backward's transposed products).
std::vector<Shape3> step_shapes() {
  return {{false, true, 768, 384, 128},  {false, false, 768, 128, 384},  {true, false, 384, 128, 768},
          {false, true, 768, 512, 128},  {false, false, 768, 128, 512},  {true, false, 512, 128, 768},
          {false, true, 768, 65, 128},   {false, false, 768, 128, 65},   {true, false, 65, 128, 768},
          {false, true, 64, 64, 32},     {false, false, 64, 32, 64},     {true, false, 64, 32, 64},
          {false, true, 4096, 1152, 384}, {false, false, 4096, 384, 1536}, {true, false, 1536, 384, 4096},
          {false, true, 4096, 65, 384},  {false, true, 128, 128, 64},    {false, false, 128, 64, 128},
          {true, false, 128, 64, 128}};
}

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// ‖x − y‖ / ‖y‖ (Frobenius), in double.
double relative_difference(const std::vector<float>& x, const std::vector<float>& y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    den += static_cast<double>(y[i]) * y[i];
  }
  return std::sqrt(num / den);
}

// C = op(A)·op(B) of tight operands with the given provider (and the caller's autocast).
std::vector<float> product(const Shape3& s, const std::vector<float>& A, const std::vector<float>& B) {
  std::vector<float> C(static_cast<size_t>(s.M * s.N), -1.0f);
  const int64_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
  kernels::gemm_rows(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), lda, B.data(), ldb, 0.0f, C.data(), s.N);
  return C;
}

bool onednn_here() { return kernels::gemm_provider_available(GemmProvider::OneDNN); }

}  // namespace

TEST(GemmProvider, OpenBlasIsTheDefaultAndAlwaysAvailable) {
  EXPECT_EQ(kernels::gemm_provider(), GemmProvider::OpenBLAS);
  EXPECT_TRUE(kernels::gemm_provider_available(GemmProvider::OpenBLAS));
  EXPECT_STREQ(kernels::gemm_provider_name(GemmProvider::OpenBLAS), "openblas");
  EXPECT_STREQ(kernels::gemm_provider_name(GemmProvider::OneDNN), "onednn");
}

TEST(GemmProvider, OneDnnIsBuiltWhereTheBuildFoundIt) {
  // make test installs libdnnl-dev (scripts/setup-deps.sh): there the provider must be built.
  std::string why;
  const bool available = kernels::gemm_provider_available(GemmProvider::OneDNN, &why);
  EXPECT_EQ(available, kernels::onednn::built_with());
  if (!available) {
    EXPECT_NE(why.find("without oneDNN"), std::string::npos) << why;
    EXPECT_THROW(kernels::set_gemm_provider(GemmProvider::OneDNN), std::invalid_argument);
    EXPECT_EQ(kernels::gemm_provider(), GemmProvider::OpenBLAS);
  }
}

TEST(GemmProvider, OneDnnProductsEqualOpenBlasAtTheStepsShapes) {
  if (!onednn_here()) GTEST_SKIP() << "built without oneDNN";
  for (const Shape3& s : step_shapes()) {
    const auto A = random_values(static_cast<size_t>(s.M * s.K), 1), B = random_values(static_cast<size_t>(s.K * s.N), 2);
    const auto ref = product(s, A, B);
    std::vector<float> got;
    {
      kernels::GemmProviderGuard onednn(GemmProvider::OneDNN);
      got = product(s, A, B);
    }
    EXPECT_LE(relative_difference(got, ref), 1e-5) << s.ta << s.tb << " " << s.M << "x" << s.N << "x" << s.K;
  }
  EXPECT_EQ(kernels::gemm_provider(), GemmProvider::OpenBLAS);  // the guard restored it
}

TEST(GemmProvider, OneDnnHonoursAlphaBetaAndStrides) {
  if (!onednn_here()) GTEST_SKIP() << "built without oneDNN";
  // A (2, 3) inside rows of 4, B (3, 2) inside rows of 3, C (2, 2) inside rows of 5.
  const float A[8] = {1, 2, 3, 99, 4, 5, 6, 99}, B[9] = {1, 0, 99, 0, 1, 99, 1, 1, 99};
  float C[10] = {1, 1, 7, 7, 7, 1, 1, 7, 7, 7};
  kernels::GemmProviderGuard onednn(GemmProvider::OneDNN);
  kernels::gemm(false, false, 2, 2, 3, 2.0f, A, 4, B, 3, 0.5f, C, 5);
  // A·B = [[4, 5], [10, 11]]; 2·A·B + 0.5·C
  EXPECT_EQ(std::vector<float>(C, C + 10), (std::vector<float>{8.5f, 10.5f, 7, 7, 7, 20.5f, 22.5f, 7, 7, 7}));
}

namespace {
volatile std::sig_atomic_t g_alarms = 0;
extern "C" void count_alarm(int) { g_alarms = g_alarms + 1; }

// SIGALRM every 200 µs, handled on the interrupted thread's own stack (as Ctrl-C's flag and
// Python's handler are), for the guard's lifetime.
class AlarmStream {
 public:
  AlarmStream() {
    struct sigaction sa {};
    sa.sa_handler = count_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, &old_action_);
    itimerval every{};
    every.it_interval.tv_usec = every.it_value.tv_usec = 200;
    setitimer(ITIMER_REAL, &every, &old_timer_);
  }
  ~AlarmStream() {
    setitimer(ITIMER_REAL, &old_timer_, nullptr);
    sigaction(SIGALRM, &old_action_, nullptr);
  }

 private:
  struct sigaction old_action_ {};
  itimerval old_timer_{};
};
}  // namespace

// oneDNN 2.6's JIT GEMMs keep data below the stack pointer, beyond the red zone: before the
// provider held signals around each call, a handler running meanwhile corrupted the heap
// (glibc aborted with "corrupted size vs. prev_size" within a few hundred GEMMs).
TEST(GemmProvider, OneDnnGemmsSurviveSignalsHandledDuringThem) {
  if (!onednn_here()) GTEST_SKIP() << "built without oneDNN";
  std::vector<Shape3> shapes = step_shapes();
  shapes.resize(12);  // the default model's
  std::vector<std::vector<float>> A, B, ref;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape3& s = shapes[i];
    A.push_back(random_values(static_cast<size_t>(s.M * s.K), 3 + static_cast<unsigned>(i)));
    B.push_back(random_values(static_cast<size_t>(s.K * s.N), 50 + static_cast<unsigned>(i)));
    ref.push_back(product(s, A[i], B[i]));  // OpenBLAS, no signals
  }
  kernels::GemmProviderGuard onednn(GemmProvider::OneDNN);
  g_alarms = 0;
  int64_t gemms = 0;
  {
    const AlarmStream alarms;
    for (int round = 0; round < 400 && g_alarms < 300; ++round)
      for (size_t i = 0; i < shapes.size(); ++i, ++gemms)
        ASSERT_LE(relative_difference(product(shapes[i], A[i], B[i]), ref[i]), 1e-5) << "round " << round;
  }
  EXPECT_GT(g_alarms, 0) << "no SIGALRM arrived during " << gemms << " GEMMs: the test tested nothing";
}

// The same for the native bf16 path through oneDNN's matmul primitive (its brgemm kernels are
// JIT code too): the products under the alarms equal those made without them, bit for bit
// (the same kept primitives, the same order of sums).
TEST(GemmProvider, OneDnnMatmulPrimitivesSurviveSignalsHandledDuringThem) {
  if (!kernels::bf16_api_available(kernels::Bf16Api::Matmul)) GTEST_SKIP() << "no oneDNN matmul primitive here";
  std::vector<Shape3> shapes = step_shapes();
  shapes.resize(12);  // the default model's
  kernels::GemmProviderGuard onednn(GemmProvider::OneDNN);
  const kernels::Bf16ApiGuard matmul(kernels::Bf16Api::Matmul);
  const AutocastGuard bf16(Precision::BF16);
  std::vector<std::vector<float>> A, B, ref;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape3& s = shapes[i];
    A.push_back(random_values(static_cast<size_t>(s.M * s.K), 3 + static_cast<unsigned>(i)));
    B.push_back(random_values(static_cast<size_t>(s.K * s.N), 50 + static_cast<unsigned>(i)));
    ref.push_back(product(s, A[i], B[i]));  // no signals
  }
  g_alarms = 0;
  int64_t gemms = 0;
  {
    const AlarmStream alarms;
    for (int round = 0; round < 400 && g_alarms < 300; ++round)
      for (size_t i = 0; i < shapes.size(); ++i, ++gemms) ASSERT_EQ(product(shapes[i], A[i], B[i]), ref[i]) << "round " << round;
  }
  EXPECT_GT(g_alarms, 0) << "no SIGALRM arrived during " << gemms << " GEMMs: the test tested nothing";
}

namespace {
bool sigint_blocked_here() {
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, SIGINT) == 1;
}
}  // namespace

TEST(AsyncSignals, HeldScopesNestAndReleaseOnlyWhatTheyHeld) {
  ASSERT_FALSE(sigint_blocked_here()) << "the test runner's thread should not hold SIGINT";
  {
    const AsyncSignalsHeld outer;
    EXPECT_TRUE(sigint_blocked_here());
    { const AsyncSignalsHeld inner; }  // a GEMM inside a held scope: no early release
    EXPECT_TRUE(sigint_blocked_here());
    EXPECT_TRUE(async_signals_held());
    // faults stay deliverable
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, nullptr, &now);
    EXPECT_EQ(sigismember(&now, SIGSEGV), 0);
  }
  EXPECT_FALSE(sigint_blocked_here());
  EXPECT_FALSE(async_signals_held());
  // held for life from inside a scope: the scope's end keeps them held (on a thread of its own,
  // so that the test runner's thread keeps its signals)
  bool held_after = false;
  std::thread([&] {
    {
      const AsyncSignalsHeld scope;
      hold_async_signals_for_this_thread();
    }
    held_after = sigint_blocked_here() && async_signals_held();
  }).join();
  EXPECT_TRUE(held_after);
}

TEST(AsyncSignals, PoolWorkersHoldThemForLifeAndTheCallersThreadDoesNot) {
  // Both chunks wait until the other has started, so two threads run them: the caller's and a
  // worker's. A oneDNN GEMM on the worker then needs no rt_sigprocmask (async_signals.h), and
  // a signal sent to the process goes to the caller's thread.
  const int threads = parallel::num_threads();
  parallel::set_num_threads(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> started{0};
  std::atomic<bool> worker_holds{false}, worker_seen{false}, caller_holds{true}, timed_out{false};
  parallel::parallel_for(2, 1, [&](int64_t, int64_t) {
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2 && !timed_out.load())
      if (std::chrono::steady_clock::now() > deadline) timed_out = true;
    if (std::this_thread::get_id() == caller) {
      caller_holds = sigint_blocked_here();
    } else {
      worker_seen = true;
      worker_holds = sigint_blocked_here() && async_signals_held();
    }
  });
  parallel::set_num_threads(threads);
  ASSERT_FALSE(timed_out.load()) << "the pool's worker never took its chunk";
  ASSERT_TRUE(worker_seen.load());
  EXPECT_TRUE(worker_holds.load());
  EXPECT_FALSE(caller_holds.load());
  EXPECT_FALSE(sigint_blocked_here());
}

TEST(Bf16, RoundsToNearestTiesToEven) {
  using kernels::round_to_bf16;
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  // bf16 keeps 8 significant bits: the neighbours of 1 are 1 - 2^-8 and 1 + 2^-7.
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-9f), 1.0f);              // below half way: down
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f), 1.0f);              // half way, 1 is even: down
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);  // past half way: up
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-7f + 0x1p-8f), 1.0f + 0x1p-6f);   // half way, odd below: up to even
  EXPECT_EQ(round_to_bf16(-3.0f), -3.0f);
  EXPECT_EQ(round_to_bf16(0.1f), 0.10009765625f);  // 0x3DCD: torch.tensor(0.1).bfloat16().item()
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::max()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(round_to_bf16(-std::numeric_limits<float>::infinity()), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload sits in the low bits only must not round to inf.
  uint32_t low_nan_bits = 0x7f800001u;
  float low_nan;
  std::memcpy(&low_nan, &low_nan_bits, sizeof low_nan);
  EXPECT_TRUE(std::isnan(round_to_bf16(low_nan)));
  EXPECT_EQ(round_to_bf16(0x1p-130f), 0x1p-130f);  // a subnormal with few bits stays as it is
  EXPECT_EQ(kernels::bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(kernels::bf16_to_float(0x4049), 3.140625f);
}

TEST(Bf16, BlockRoundingEqualsTheScalarRoundingOnEveryLane) {
  // Rows of odd lengths at a wider stride: the vector loop and its tail.
  const int64_t rows = 3, cols = 37, ld = 41;
  const auto src = random_values(static_cast<size_t>(rows * ld), 3);
  std::vector<uint16_t> bits(static_cast<size_t>(rows * cols));
  std::vector<float> values(static_cast<size_t>(rows * cols));
  kernels::round_block_to_bf16(src.data(), rows, cols, ld, bits.data());
  kernels::round_block_to_bf16(src.data(), rows, cols, ld, values.data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float x = src[static_cast<size_t>(r * ld + c)];
      ASSERT_EQ(bits[static_cast<size_t>(r * cols + c)], kernels::bf16_bits(x));
      ASSERT_EQ(values[static_cast<size_t>(r * cols + c)], kernels::round_to_bf16(x));
    }
}

TEST(Bf16, AutocastGemmEqualsSgemmOfRoundedOperands) {
  // Portable path (OpenBLAS): the same sgemm on the rounded operands, so bit for bit; the
  // native path (oneDNN's bf16 GEMM, where it runs) sums in its own order: within 1e-5.
  for (const Shape3& s : step_shapes()) {
    if (s.M * s.N * s.K > (int64_t(1) << 27)) continue;  // the large ones add nothing here
    const auto A = random_values(static_cast<size_t>(s.M * s.K), 4), B = random_values(static_cast<size_t>(s.K * s.N), 5);
    std::vector<float> Ar(A.size()), Br(B.size());
    for (size_t i = 0; i < A.size(); ++i) Ar[i] = kernels::round_to_bf16(A[i]);
    for (size_t i = 0; i < B.size(); ++i) Br[i] = kernels::round_to_bf16(B[i]);
    const auto ref = product(s, Ar, Br);
    const auto fp32 = product(s, A, B);
    std::vector<float> portable;
    {
      AutocastGuard bf16(Precision::BF16);
      portable = product(s, A, B);
    }
    EXPECT_EQ(portable, ref) << s.M << "x" << s.N << "x" << s.K;
    EXPECT_NE(portable, fp32);  // the rounding happened
    if (onednn_here() && kernels::bf16_path(GemmProvider::OneDNN) == kernels::Bf16Path::Native) {
      kernels::GemmProviderGuard onednn(GemmProvider::OneDNN);
      AutocastGuard bf16(Precision::BF16);
      EXPECT_LE(relative_difference(product(s, A, B), ref), 1e-5) << s.M << "x" << s.N << "x" << s.K;
    }
  }
}

TEST(Bf16, SingleGemmsAtAStrideRoundOnlyTheirOwnElements) {
  // kernels::gemm (not split) on operands at a wider stride, as attention's heads are read in
  // place; a NaN outside the operands must not reach the product.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float A[6] = {1.0f + 0x1p-9f, 2, nan, 3, 4, nan};  // (2, 2) at stride 3
  const float B[4] = {1, 0, 0, 1};
  float C[4] = {0, 0, 0, 0};
  AutocastGuard bf16(Precision::BF16);
  kernels::gemm(false, false, 2, 2, 2, 1.0f, A, 3, B, 2, 0.0f, C, 2);
  EXPECT_EQ(std::vector<float>(C, C + 4), (std::vector<float>{1, 2, 3, 4}));  // 1 + 2^-9 rounded to 1
}

TEST(Bf16, ARoundedCopysStorageComesBackFromTheBufferCacheUnzeroed) {
  // A step rounds the same sizes every step: a copy's storage goes back to the buffer cache
  // when the copy goes, and the next copy of that size takes it (no memset, no page faults).
  constexpr int64_t rows = 509, cols = 1009;  // an odd size, held by nothing else
  const size_t bytes = (rows * cols * sizeof(uint16_t) + 63) / 64 * 64;
  const std::vector<float> src(rows * cols, 1.0f + 0x1p-9f);
  {
    void* probe = buffer_cache::allocate(bytes);
    buffer_cache::release(probe, bytes);
    if (buffer_cache::cached_bytes() == 0) GTEST_SKIP() << "the buffer cache is off (AddressSanitizer)";
    buffer_cache::clear();
  }
  const int64_t before = buffer_cache::cached_bytes();  // 0
  const void* first = nullptr;
  {
    kernels::Bf16Matrix m;
    m.round(src.data(), rows, cols, cols, true);
    first = m.data();
    kernels::Bf16Matrix moved = std::move(m);  // one owner: released once, by `moved`
    EXPECT_EQ(moved.data(), first);
  }
  EXPECT_EQ(buffer_cache::cached_bytes(), before + static_cast<int64_t>(bytes));
  kernels::Bf16Matrix again;
  again.round(src.data(), rows, cols, cols, true);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(buffer_cache::cached_bytes(), before);
  const auto* bits = static_cast<const uint16_t*>(again.data());
  EXPECT_EQ(bits[rows * cols - 1], kernels::bf16_bits(1.0f));  // 1 + 2^-9 rounds to 1
}

TEST(Bf16, ClaimingRowsZeroesThoseRowsAndNoOthers) {
  for (const bool native : {true, false}) {
    SCOPED_TRACE(native ? "bf16 bits" : "float32 values");
    constexpr int64_t rows = 7, cols = 33;
    const std::vector<float> src(rows * cols, 3.0f);
    kernels::Bf16Matrix m;
    m.round(src.data(), rows, cols, cols, native);
    m.claim_rows(2, 5);
    m.claim_rows(6, 6);  // an empty range claims nothing
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float v = native ? kernels::bf16_to_float(static_cast<const uint16_t*>(m.at(r, c))[0])
                               : static_cast<const float*>(m.at(r, c))[0];
        EXPECT_EQ(v, r >= 2 && r < 5 ? 0.0f : 3.0f) << "row " << r << ", column " << c;
      }
  }
}

TEST(Bf16, RoundingAGradientInPartsGivesEachValueRoundedAndTheColumnSums) {
  // round_rows_parallel_summing_columns: each part zeroes its own rows (claim_rows) and rounds
  // into them, summing the columns. A part zeroing rows not its own would show here as zeros
  // where the other part had already rounded; the storage held a larger matrix before.
  constexpr int64_t rows = 601, cols = 70, ld = 75;  // two parts or more: 601 ≥ 2 · (2^14 / 70) rows
  std::vector<float> src(rows * ld);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::sin(0.37f * static_cast<float>(i)) * 3.0f;
  for (const bool native : {true, false}) {
    SCOPED_TRACE(native ? "bf16 bits" : "float32 values");
    if (native && !kernels::onednn::bf16_gemm_runs()) continue;  // (the native path is what gemm picks)
    const kernels::GemmProviderGuard provider(native ? GemmProvider::OneDNN : GemmProvider::OpenBLAS);
    kernels::Bf16Matrix m;
    const std::vector<float> old(rows * ld, 7.0f);
    m.round(old.data(), rows, ld, ld, native);
    std::vector<float> sums(cols);
    kernels::round_rows_parallel_summing_columns(m, src.data(), rows, cols, ld, sums.data());
    ASSERT_EQ(m.rows(), rows);
    ASSERT_EQ(m.cols(), cols);
    for (int64_t c = 0; c < cols; ++c) {
      double want = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const float v = src[r * ld + c];
        want += v;
        const float got = native ? kernels::bf16_to_float(static_cast<const uint16_t*>(m.at(r, c))[0])
                                 : static_cast<const float*>(m.at(r, c))[0];
        ASSERT_EQ(got, kernels::round_to_bf16(v)) << "row " << r << ", column " << c;
      }
      EXPECT_NEAR(sums[c], want, 1e-5 * (1 + std::abs(want))) << "column " << c;
    }
  }
}

TEST(Bf16, ThePathIsNativeOnlyWhereOneDnnRunsItsBf16Gemm) {
  EXPECT_EQ(kernels::bf16_path(GemmProvider::OpenBLAS), kernels::Bf16Path::Portable);
  const bool native = kernels::onednn::bf16_gemm_runs();
  EXPECT_EQ(kernels::bf16_path(GemmProvider::OneDNN) == kernels::Bf16Path::Native, native);
  EXPECT_NE(kernels::bf16_path_description(GemmProvider::OpenBLAS).find("portable"), std::string::npos);
}
