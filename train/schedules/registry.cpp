#include "train/schedules/registry.h"

#include "train/config/run_config.h"

namespace ag::train {

// The rows, each in its own file.
ScheduleEntry cosine_schedule();  // train/schedules/cosine.cpp
ScheduleEntry wsd_schedule();     // train/schedules/wsd.cpp

template <>
std::vector<ScheduleEntry> ScheduleRegistry::builtin() {
  return {cosine_schedule(), wsd_schedule()};
}

double schedule_factor(const TrainConfig& cfg, int64_t it, int64_t iters) { return cfg.schedule->factor(cfg, it, iters); }

double warmup_factor(int64_t it, int64_t warmup) { return static_cast<double>(it + 1) / static_cast<double>(warmup + 1); }

double floor_factor(const TrainConfig& cfg) { return cfg.min_lr / cfg.lr; }

}  // namespace ag::train
