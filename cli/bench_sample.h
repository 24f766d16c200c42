// `attograd bench sample`: KV-cache decoding of the GPT, next to the memory-bandwidth bound.
//
// Decoding one token per sequence reads every weight once per step, so no step can be faster
// than the weights' bytes over the machine's memory bandwidth. The bound printed is that:
//   bound tokens/s = batch × copy bandwidth / weight bytes per step
// with the copy bandwidth of a ≥ 256 MB memcpy (bytes read + bytes written, as STREAM's copy
// counts them), the best of a few runs, on one thread and on every core. The read bandwidth
// (a sum over the same 256 MB) is reported beside it, with the bound it gives: decoding only
// reads its weights, and on some machines a read stream runs faster than a copy.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "models/model_config.h"

namespace ag::cli {

struct CopyBandwidth {
  double gbps_1thread = 0;  // GB/s (1e9 bytes), read + write
  double gbps_all = 0;      // the same with `threads` threads, each copying its part
  int threads = 1;
  double read_gbps_1thread = 0, read_gbps_all = 0;  // reading only (an integer sum), bytes read
  double best() const { return gbps_1thread > gbps_all ? gbps_1thread : gbps_all; }
  double best_read() const { return read_gbps_1thread > read_gbps_all ? read_gbps_1thread : read_gbps_all; }
};
CopyBandwidth measure_copy_bandwidth(int64_t bytes = int64_t(256) << 20, int reps = 5);

// At each batch size, one JSON object with:
//   tokens_per_s   sampling: `tokens` new tokens (temperature 1, from the prompt "0" in every
//                  row) through TransformerLM::generate_batch, median of `reps` runs, all rows;
//                  what PyTorch's decode is compared with (bench/torch_baseline.py --decode);
//   decode_step_*  the decode step alone: Decoder::forward of one token per row at positions
//                  0 .. block-1, median of `reps` sweeps; step_over_bound is that next to the
//                  bound (achieved_over_bound the sampling figure's), and bound_with_kv_* adds
//                  the keys and values the step reads (kv_mb_per_step, mean over the sweep).
std::vector<nlohmann::json> bench_sample(const models::ModelConfig& cfg, const std::vector<int64_t>& batches,
                                         int64_t tokens, int reps);

}  // namespace ag::cli
