// tuning: what attograd measures of the machine it runs on, and what it chooses from that. The
// one interface train, cli and the Python module use:
//   openblas_kernels.h  which OpenBLAS kernels a process runs on a CPU newer than its OpenBLAS
//   kept.h              the figures measured once and kept per machine, and their keys
//   peak_flops.h        the GEMM peak MFU is measured against
//   fma_peak.h          the cores' multiply-add (and AMX tile) peaks `bench train` sets its floor against
//   gemm_timing.h       the timings --gemm auto and --gemm-bf16 auto choose from
// It sits above the models (it times their GEMM shapes) and below train, which turns these
// choices into a run's (train/gemm_choice.h). Nothing in it runs inside a training step.
#pragma once

#include "tuning/fma_peak.h"
#include "tuning/gemm_timing.h"
#include "tuning/kept.h"
#include "tuning/openblas_kernels.h"
#include "tuning/peak_flops.h"
