// AG_MULTIVERSION: compile a hot float32 loop for AVX-512, AVX2+FMA and baseline x86-64 and
// pick one at run time from what the CPU offers (GCC target_clones). The binary still runs on
// any x86-64; no -march flag is needed. Inline helpers that such a function calls are
// compiled into each clone with its instruction set.
#pragma once

// ifunc-based dispatch needs GCC on x86-64 with glibc; elsewhere the plain build is used.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define AG_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define AG_MULTIVERSION
#endif
