// oneDNN's matmul primitive for the native bf16 path (onednn.h: matmul_bf16). With onednn.cpp,
// the only file that sees oneDNN's headers.
//
// Why a second interface to the same library: oneDNN 2.6 runs its matmul primitive on its
// brgemm kernels (`brg:avx512_core_amx_bf16` on an AMX CPU: the tiles; `brg:avx512_core_bf16`
// on AVX512_BF16), generated for one shape at a time, where the gemm API runs one kernel set
// for every shape. A primitive costs 100-200 µs to create (its kernels are generated), so each
// thread keeps the ones it made, by shape, transposes, leading dimensions, alpha and beta:
// a training step makes the same products every step.
#include "autograd/kernels/onednn.h"

#include <stdexcept>

#ifdef ATTOGRAD_WITH_ONEDNN
#include <cstdlib>
#include <cstring>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "autograd/async_signals.h"
#endif

namespace ag::kernels::onednn {

#ifdef ATTOGRAD_WITH_ONEDNN
namespace {

using dnnl::memory;

struct Key {
  int64_t M, N, K, lda, ldb, ldc;
  float alpha, beta;
  bool ta, tb;
  bool operator==(const Key& o) const {
    return M == o.M && N == o.N && K == o.K && lda == o.lda && ldb == o.ldb && ldc == o.ldc && alpha == o.alpha &&
           beta == o.beta && ta == o.ta && tb == o.tb;
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = 0;
    auto mix = [&h](uint64_t v) { h ^= std::hash<uint64_t>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    for (const int64_t v : {k.M, k.N, k.K, k.lda, k.ldb, k.ldc}) mix(static_cast<uint64_t>(v));
    uint32_t a, b;
    std::memcpy(&a, &k.alpha, sizeof a);
    std::memcpy(&b, &k.beta, sizeof b);
    mix((uint64_t(a) << 32) | b);
    mix(uint64_t(k.ta) << 1 | uint64_t(k.tb));
    return h;
  }
};

// A product of one key: its primitive and the memory objects of its three operands and its
// scratchpad, whose addresses are set at each call.
struct Kept {
  dnnl::matmul primitive;
  memory a, b, c, scratchpad;
  std::unordered_map<int, memory> args;
};

// The row-major operands as oneDNN's descriptors: op(A) (M, K), op(B) (K, N), C (M, N), each
// at its strides, so that a transposed operand is read in place (strides {1, ld}), never copied.
memory::desc operand(int64_t rows, int64_t cols, bool transposed, int64_t ld, memory::data_type type) {
  return memory::desc({rows, cols}, type, transposed ? memory::dims{1, ld} : memory::dims{ld, 1});
}

dnnl::matmul::primitive_desc describe(const dnnl::engine& engine, const Key& k) {
  const memory::desc a = operand(k.M, k.K, k.ta, k.lda, memory::data_type::bf16);
  const memory::desc b = operand(k.K, k.N, k.tb, k.ldb, memory::data_type::bf16);
  const memory::desc c = operand(k.M, k.N, false, k.ldc, memory::data_type::f32);
  dnnl::primitive_attr attr;
  // Each thread passes its own scratchpad: a primitive shared between threads (oneDNN's cache
  // hands the same one to both) then never shares one.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (k.alpha != 1.0f) attr.set_output_scales(0, {k.alpha});  // C = alpha·(A·B) ...
  if (k.beta != 0.0f) {                                         // ... + beta·C, as the gemm API
    dnnl::post_ops sum;
    sum.append_sum(k.beta);
    attr.set_post_ops(sum);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine);
}

// This thread's primitives. Bounded: a command whose shapes keep changing (attention over a
// growing context) makes a new product at each; when kMaxKept are held they are all let go
// (oneDNN's own primitive cache still holds their kernels, so making them again is quick).
class ThreadMatmuls {
 public:
  ThreadMatmuls() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  void run(const Key& k, const uint16_t* A, const uint16_t* B, float* C) {
    auto it = kept_.find(k);
    if (it == kept_.end()) {
      if (kept_.size() >= kMaxKept) kept_.clear();
      it = kept_.emplace(k, make(k)).first;
    }
    Kept& p = it->second;
    p.a.set_data_handle(const_cast<uint16_t*>(A));  // (read only: oneDNN's handles are not const)
    p.b.set_data_handle(const_cast<uint16_t*>(B));
    p.c.set_data_handle(C);
    p.scratchpad.set_data_handle(scratch(p.scratchpad.get_desc().get_size()));
    p.primitive.execute(stream_, p.args);
    stream_.wait();  // (a CPU stream has finished already; the scratchpad is reused next call)
  }

  std::string kernel(const Key& k) { return describe(engine_, k).impl_info_str(); }
  int64_t kept() const { return static_cast<int64_t>(kept_.size()); }

 private:
  static constexpr size_t kMaxKept = 512;

  Kept make(const Key& k) {
    const dnnl::matmul::primitive_desc pd = describe(engine_, k);
    Kept p{dnnl::matmul(pd), memory(pd.src_desc(), engine_, nullptr), memory(pd.weights_desc(), engine_, nullptr),
           memory(pd.dst_desc(), engine_, nullptr), memory(pd.scratchpad_desc(), engine_, nullptr), {}};
    p.args = {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}, {DNNL_ARG_SCRATCHPAD, p.scratchpad}};
    return p;
  }

  // At least `bytes` of this thread's scratch space, 64-byte aligned (grows only).
  void* scratch(size_t bytes) {
    if (bytes > scratch_bytes_) {
      const size_t size = (bytes + 63) / 64 * 64;
      scratch_.reset(static_cast<char*>(std::aligned_alloc(64, size)));
      if (!scratch_) throw std::bad_alloc();
      scratch_bytes_ = size;
    }
    return scratch_.get();
  }

  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  dnnl::engine engine_;
  dnnl::stream stream_;  // a stream is not to be shared between threads
  std::unordered_map<Key, Kept, KeyHash> kept_;
  std::unique_ptr<char, Free> scratch_;
  size_t scratch_bytes_ = 0;
};

ThreadMatmuls& thread_matmuls() {
  thread_local ThreadMatmuls m;
  return m;
}

std::string failed(const char* what, const std::exception& e) {
  return std::string("oneDNN matmul primitive: ") + what + " failed: " + e.what();
}

}  // namespace

void matmul_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A, int64_t lda,
                 const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // no product: C = beta·C (as the gemm API; beta 0 writes zeros, whatever C held)
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < N; ++c) C[r * ldc + c] = beta == 0.0f ? 0.0f : beta * C[r * ldc + c];
    return;
  }
  detail::one_thread_per_call();  // before the thread's first primitive: it is made for a team of one
  const AsyncSignalsHeld held;    // (onednn.cpp: its JIT kernels write below the stack pointer)
  try {
    thread_matmuls().run({M, N, K, lda, ldb, ldc, alpha, beta, ta, tb}, A, B, C);
  } catch (const dnnl::error& e) {
    throw std::runtime_error(failed(("a " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                                     " product").c_str(),
                                    e));
  }
}

bool matmul_bf16_runs(std::string* why) {
  // 1·2 = 2 on a tight 1×1×1 product, as bf16_gemm_runs checks the gemm API.
  static const std::string failure = [] {
    try {
      const uint16_t a[1] = {0x3f80}, b[1] = {0x4000};
      float c[1] = {0};
      matmul_bf16(false, false, 1, 1, 1, 1.0f, a, 1, b, 1, 0.0f, c, 1);
      return c[0] == 2.0f ? std::string() : std::string("its bf16 product 1·2 gave " + std::to_string(c[0]));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }();
  if (why) *why = failure;
  return failure.empty();
}

std::string matmul_bf16_kernel(int64_t M, int64_t N, int64_t K) {
  detail::one_thread_per_call();
  try {
    return thread_matmuls().kernel({M, N, K, K, K, N, 1.0f, 0.0f, false, true});  // x·Wᵀ, tight
  } catch (const dnnl::error&) {
    return "";
  }
}

int64_t matmul_bf16_kept_here() { return thread_matmuls().kept(); }

#else  // built without oneDNN: bf16_api_available() keeps these from being called

void matmul_bf16(bool, bool, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t, const uint16_t*, int64_t,
                 float, float*, int64_t) {
  throw std::logic_error("attograd was built without oneDNN");
}
bool matmul_bf16_runs(std::string* why) {
  if (why) *why = "attograd was built without oneDNN";
  return false;
}
std::string matmul_bf16_kernel(int64_t, int64_t, int64_t) { return ""; }
int64_t matmul_bf16_kept_here() { return 0; }

#endif

}  // namespace ag::kernels::onednn
