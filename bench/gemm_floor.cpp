#include "bench/gemm_floor.h"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "autograd/kernels/gemm.h"
#include "autograd/parallel.h"

namespace ag::bench {

namespace {
// Where record_gemms is writing, or null. Set and cleared only while attograd runs on one
// thread; atomic so that reading it from any thread is defined.
std::atomic<std::vector<GemmShape>*> g_recording{nullptr};

using SgemmFn = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float, const float*,
                         blasint, const float*, blasint, float, float*, blasint);

// OpenBLAS's own cblas_sgemm: the next definition after this program's.
SgemmFn openblas_sgemm() {
  static const SgemmFn fn = [] {
    auto* f = reinterpret_cast<SgemmFn>(dlsym(RTLD_NEXT, "cblas_sgemm"));
    if (!f) {
      std::fprintf(stderr, "attograd: cannot find OpenBLAS's cblas_sgemm (dlsym: %s)\n", dlerror());
      std::abort();
    }
    return f;
  }();
  return fn;
}
}  // namespace

bool recording_gemms() { return g_recording.load(std::memory_order_relaxed) != nullptr; }

std::vector<GemmShape> record_gemms(const std::function<void()>& step) {
  // On one thread gemm_rows makes one call per GEMM, so each record is a whole GEMM.
  const int threads = parallel::num_threads();
  parallel::set_num_threads(1);
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

GemmFloor replay_gemms(const std::vector<GemmShape>& calls, int threads, int reps) {
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
  // accumulating (beta = 1) calls far from overflow over the replays.
  const std::vector<float> A(static_cast<size_t>(a_max), 0.01f), B(static_cast<size_t>(b_max), 0.01f);
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
        kernels::gemm(s.ta, s.tb, r1 - r0, s.N, s.K, 1.0f, A.data() + (s.ta ? r0 : r0 * lda), lda, B.data(), ldb,
                      s.beta, c + r0 * s.N, s.N);
      } else if (static_cast<int>(i % static_cast<size_t>(threads)) == p) {
        kernels::gemm(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), lda, B.data(), ldb, s.beta, c, s.N);
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
  if (auto* rec = ag::bench::g_recording.load(std::memory_order_relaxed); rec && order == CblasRowMajor)
    rec->push_back({ta == CblasTrans, tb == CblasTrans, M, N, K, beta});
  ag::bench::openblas_sgemm()(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
