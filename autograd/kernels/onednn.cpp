#include "autograd/kernels/onednn.h"

#include <stdexcept>

#ifdef ATTOGRAD_WITH_ONEDNN
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>

#include "autograd/async_signals.h"

// Exported by libdnnl (with DNNL_API) since 1.x but declared only in its internal headers; the
// bfloat16_t there is a struct of one uint16_t, so the bits pass as they are.
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K,
                                               float alpha, const uint16_t* A, dnnl_dim_t lda, const uint16_t* B,
                                               dnnl_dim_t ldb, float beta, float* C, dnnl_dim_t ldc);
#endif

namespace ag::kernels::onednn {

#ifdef ATTOGRAD_WITH_ONEDNN

// Debian's oneDNN is built on OpenMP (DNNL_CPU_RUNTIME OMP, libgomp): each GEMM would start a
// team of omp_get_max_threads() threads (one per core) on whichever thread calls it, so the
// pool's threads would each bring OpenMP threads of their own to fight for the same cores (two
// threads calling dnnl_sgemm on the 2-core Zen 5 of bench/README.md left an OpenMP worker
// thread in the process after both had joined; with a team of one per thread, none). omp_set_num_threads
// sets the calling thread's own team size, so each thread sets it to one before its first call. Looked up at run time: a oneDNN built on
// another runtime has no OpenMP, and then nothing needs setting.
void detail::one_thread_per_call() {
  thread_local const bool done = [] {
    using SetThreads = void (*)(int);
    if (auto* set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))) set(1);
    return true;
  }();
  (void)done;
}

namespace {

// oneDNN 2.6's JIT GEMM kernels keep data below the stack pointer, deeper than the 128-byte
// red zone the ABI leaves to signal handlers: a signal handled on the stack of a thread inside
// dnnl_sgemm (attograd's Ctrl-C flag, Python's SIGINT handler, any handler of the caller's)
// overwrites it, and glibc then reports a corrupted heap or the process faults. Found as
// mpirun's SIGTERM after a Ctrl-C aborting the ranks; tests/autograd/test_gemm_provider.cpp holds
// GEMMs under a stream of SIGALRM. So every call runs with the asynchronous signals held
// (autograd/async_signals.h): one that arrives meanwhile is delivered when the call returns.
// The pool's workers hold them for life, so only a GEMM on a thread of the caller's pays the
// two rt_sigprocmask calls.

void check(dnnl_status_t s, const char* what) {
  if (s != dnnl_success) throw std::runtime_error(std::string("oneDNN ") + what + " failed (dnnl_status_t " + std::to_string(static_cast<int>(s)) + ")");
}

}  // namespace

bool built_with() { return true; }

void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  detail::one_thread_per_call();
  const AsyncSignalsHeld held;
  check(dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc), "dnnl_sgemm");
}

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A, int64_t lda,
               const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  detail::one_thread_per_call();
  const AsyncSignalsHeld held;
  check(dnnl_gemm_bf16bf16f32(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc),
        "dnnl_gemm_bf16bf16f32");
}

bool bf16_gemm_runs() {
  static const bool runs = [] {
    detail::one_thread_per_call();
    const uint16_t a[1] = {0x3f80}, b[1] = {0x4000};  // 1 · 2
    float c[1] = {0};
    const AsyncSignalsHeld held;
    return dnnl_gemm_bf16bf16f32('N', 'N', 1, 1, 1, 1.0f, a, 1, b, 1, 0.0f, c, 1) == dnnl_success && c[0] == 2.0f;
  }();
  return runs;
}

std::string version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string isa() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "isa " + std::to_string(static_cast<int>(dnnl_get_effective_cpu_isa()));
  }
}

#else  // built without oneDNN: gemm_provider_available() keeps these from being called

namespace {
[[noreturn]] void absent() { throw std::logic_error("attograd was built without oneDNN"); }
}  // namespace

bool built_with() { return false; }
void sgemm(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float, float*,
           int64_t) {
  absent();
}
void gemm_bf16(bool, bool, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t, const uint16_t*, int64_t, float,
               float*, int64_t) {
  absent();
}
bool bf16_gemm_runs() { return false; }
std::string version() { return ""; }
std::string isa() { return ""; }

#endif

}  // namespace ag::kernels::onednn
