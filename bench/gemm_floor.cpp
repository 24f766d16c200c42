#include "bench/gemm_floor.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "autograd/kernels/bf16.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/parallel.h"

namespace ag::bench {

namespace {
// Where record_gemms is writing, or null. Set and cleared only while attograd runs on one
// thread; atomic so that reading it from any thread is defined.
std::atomic<std::vector<GemmShape>*> g_recording{nullptr};

using SgemmFn = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float, const float*,
                         blasint, const float*, blasint, float, float*, blasint);

// The library's own definition of `name`: the next one after this program's.
template <class Fn>
Fn next_definition(const char* name) {
  auto* f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  if (!f) {
    std::fprintf(stderr, "attograd: cannot find the library's %s (dlsym: %s)\n", name, dlerror());
    std::abort();
  }
  return f;
}

SgemmFn openblas_sgemm() {
  static const SgemmFn fn = next_definition<SgemmFn>("cblas_sgemm");
  return fn;
}

void record(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float beta) {
  if (auto* rec = g_recording.load(std::memory_order_relaxed)) rec->push_back({ta, tb, M, N, K, beta});
}
}  // namespace

bool recording_gemms() { return g_recording.load(std::memory_order_relaxed) != nullptr; }

std::vector<GemmShape> record_gemms(const std::function<void()>& step) {
  // On one thread gemm_rows makes one call per GEMM, so each record is a whole GEMM.
  const int threads = parallel::num_threads();
  parallel::set_num_threads(1);
  (void)kernels::bf16_path(kernels::gemm_provider());  // its one-time probe GEMM is not the step's
  // The matmul primitive's calls are not seen from outside the library (no exported symbol per
  // call): the step is recorded through oneDNN's gemm API, whose calls are, and makes the same
  // products. The replay runs them through the interface set.
  const kernels::Bf16ApiGuard seen(kernels::Bf16Api::Gemm);
  std::vector<GemmShape> calls;
  struct Recording {  // recording stops and the threads are back even if the step throws
    explicit Recording(std::vector<GemmShape>* to) { g_recording.store(to); }
    ~Recording() { g_recording.store(nullptr); }
  };
  struct Threads {
    int n;
    ~Threads() { parallel::set_num_threads(n); }
  } restore{threads};
  {
    Recording on(&calls);
    step();
  }
  return calls;
}

GemmFloor replay_gemms(const std::vector<GemmShape>& calls, int threads, int reps, Precision precision) {
  const AutocastGuard fp32(Precision::FP32);  // the operands below are rounded already
  GemmFloor f;
  f.calls = static_cast<int64_t>(calls.size());
  int64_t a_max = 1, b_max = 1, c_max = 1;
  for (const auto& s : calls) {
    f.gflop += 2.0 * static_cast<double>(s.M * s.N * s.K) / 1e9;
    a_max = std::max(a_max, s.M * s.K);
    b_max = std::max(b_max, s.K * s.N);
    c_max = std::max(c_max, s.M * s.N);
  }
  // Operands are read-only and shared; each thread writes its own C. Small values keep the
  // accumulating (beta = 1) calls far from overflow over the replays. At bf16 they are rounded
  // once here: bits for the native path, float32 values for the portable one.
  const std::vector<float> A(static_cast<size_t>(a_max), kernels::round_to_bf16(0.01f)),
      B(static_cast<size_t>(b_max), kernels::round_to_bf16(0.01f));
  const std::vector<uint16_t> A16(static_cast<size_t>(a_max), kernels::bf16_bits(0.01f)),
      B16(static_cast<size_t>(b_max), kernels::bf16_bits(0.01f));
  const bool native = precision == Precision::BF16 && kernels::bf16_path(kernels::gemm_provider()) == kernels::Bf16Path::Native;
  // One GEMM of the replay: kernels::gemm outside autocast (the provider's sgemm), or the native
  // path's bf16 GEMM through the oneDNN interface set (kernels::bf16_api()).
  auto gemm = [&](const GemmShape& s, int64_t M, int64_t a_off, int64_t lda, int64_t ldb, float* c) {
    if (native)
      kernels::gemm_rounded_blocks(s.ta, s.tb, M, s.N, s.K, 1.0f, A16.data() + a_off, lda, B16.data(), ldb, true, s.beta,
                                   c, s.N);
    else
      kernels::gemm(s.ta, s.tb, M, s.N, s.K, 1.0f, A.data() + a_off, lda, B.data(), ldb, s.beta, c, s.N);
  };
  std::vector<std::vector<float>> C(static_cast<size_t>(threads), std::vector<float>(static_cast<size_t>(c_max)));

  auto replay_part = [&](int p) {
    float* c = C[static_cast<size_t>(p)].data();
    for (size_t i = 0; i < calls.size(); ++i) {
      const auto& s = calls[i];
      // Leading dimensions of tight row-major operands: op(A) is M×K, op(B) is K×N.
      const int64_t lda = s.ta ? s.M : s.K, ldb = s.tb ? s.K : s.N;
      const bool split = s.M * s.N * s.K >= kernels::kParallelGemmWork && s.M >= threads;
      if (split) {
        const int64_t r0 = s.M * p / threads, r1 = s.M * (p + 1) / threads;
        gemm(s, r1 - r0, s.ta ? r0 : r0 * lda, lda, ldb, c + r0 * s.N);
      } else if (static_cast<int>(i % static_cast<size_t>(threads)) == p) {
        gemm(s, s.M, 0, lda, ldb, c);
      }
    }
  };
  const int saved = parallel::num_threads();
  parallel::set_num_threads(threads);
  auto replay = [&] {
    // One chunk per thread; each replays its share of every call, never waiting for the other.
    parallel::parallel_for(threads, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) replay_part(static_cast<int>(p));
    });
  };
  replay();  // warm-up: pages touched, OpenBLAS buffers allocated
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) replay();
  f.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / std::max(reps, 1);
  parallel::set_num_threads(saved);
  return f;
}

}  // namespace ag::bench

// Every sgemm of a program linked with this file comes here (see gemm_floor.h): record its
// shape while recording, then run it on OpenBLAS.
extern "C" void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE ta,
                            OPENBLAS_CONST enum CBLAS_TRANSPOSE tb, OPENBLAS_CONST blasint M, OPENBLAS_CONST blasint N,
                            OPENBLAS_CONST blasint K, OPENBLAS_CONST float alpha, OPENBLAS_CONST float* A,
                            OPENBLAS_CONST blasint lda, OPENBLAS_CONST float* B, OPENBLAS_CONST blasint ldb,
                            OPENBLAS_CONST float beta, float* C, OPENBLAS_CONST blasint ldc) {
  if (order == CblasRowMajor) ag::bench::record(ta == CblasTrans, tb == CblasTrans, M, N, K, beta);
  ag::bench::openblas_sgemm()(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// oneDNN's two GEMMs (row-major, 'N' or 'T'), declared here with plain types: dnnl_dim_t is
// int64_t and dnnl_status_t an int-sized enum. Reached only when the library was built with oneDNN.
using DnnlSgemmFn = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                            float, float*, int64_t);
using DnnlBf16Fn = int (*)(char, char, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t, const uint16_t*,
                           int64_t, float, float*, int64_t);

extern "C" int dnnl_sgemm(char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  static const auto next = ag::bench::next_definition<DnnlSgemmFn>("dnnl_sgemm");
  ag::bench::record(ta == 'T', tb == 'T', M, N, K, beta);
  return next(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

extern "C" int dnnl_gemm_bf16bf16f32(char ta, char tb, int64_t M, int64_t N, int64_t K, float alpha,
                                     const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, float beta,
                                     float* C, int64_t ldc) {
  static const auto next = ag::bench::next_definition<DnnlBf16Fn>("dnnl_gemm_bf16bf16f32");
  ag::bench::record(ta == 'T', tb == 'T', M, N, K, beta);
  return next(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
