// --schedule cosine, nanoGPT's: a linear warmup over --warmup steps, then half a cosine from the
// peak down to the floor (--min-lr/--lr of the peak) at the last step.
#include <cmath>
#include <sstream>

#include "train/config/run_config.h"
#include "train/schedules/registry.h"

namespace ag::train {

namespace {
double factor(const TrainConfig& cfg, int64_t it, int64_t iters) {
  const double floor = floor_factor(cfg);
  if (it < cfg.warmup) return warmup_factor(it, cfg.warmup);
  if (it > iters || iters <= cfg.warmup) return floor;
  const double ratio = static_cast<double>(it - cfg.warmup) / static_cast<double>(iters - cfg.warmup);
  const double coeff = 0.5 * (1.0 + std::cos(M_PI * ratio));  // 1 -> 0
  return floor + coeff * (1.0 - floor);
}
}  // namespace

ScheduleEntry cosine_schedule() {
  return {"cosine",
          "nanoGPT's: linear warmup, then a cosine decay to --min-lr over the run",
          {},
          factor,
          [](const TrainConfig&) { return std::string("cosine schedule"); },
          [](const TrainConfig& cfg) {
            return "the cosine decay after the " + std::to_string(cfg.warmup) +
                   " warmup steps spans the whole run, so only runs still within their warmup, or with --min-lr equal "
                   "to --lr, can change --iters";
          }};
}

}  // namespace ag::train
