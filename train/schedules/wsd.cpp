// --schedule wsd, warmup–stable–decay (trapezoidal, the modded-nanogpt speedrun's): a linear
// warmup over --warmup steps, the peak held, then a linear decay to the floor (--min-lr/--lr of
// the peak) over the last --cooldown of the steps: with k = round(cooldown × iters) steps in
// the decay, step iters − j (j = k .. 1) runs at floor + (1 − floor)·j/k.
#include <cmath>
#include <sstream>

#include "train/config/run_config.h"
#include "train/schedules/registry.h"

namespace ag::train {

namespace {
const Setting kCooldown{"cooldown", "cooldown", 0.4, "wsd: the fraction of the steps in the final linear decay, in [0, 1]",
                        Check::UnitInterval};

double factor(const TrainConfig& cfg, int64_t it, int64_t iters) {
  const double floor = floor_factor(cfg);
  if (it < cfg.warmup) return warmup_factor(it, cfg.warmup);
  const int64_t decay = std::llround(cfg.settings.get(kCooldown) * static_cast<double>(iters));
  const int64_t left = iters - it;  // steps from this one to the end, this one included
  if (left > decay) return 1.0;
  if (left <= 0) return floor;
  return floor + (1.0 - floor) * static_cast<double>(left) / static_cast<double>(decay);
}
}  // namespace

ScheduleEntry wsd_schedule() {
  return {"wsd",
          "warmup, then --lr held, then a linear decay to --min-lr over the last --cooldown of the steps",
          {kCooldown},
          factor,
          [](const TrainConfig& cfg) {
            std::ostringstream s;
            s << "wsd schedule (the last " << cfg.settings.get(kCooldown) << " of the steps in the decay)";
            return s.str();
          },
          [](const TrainConfig& cfg) {
            std::ostringstream s;
            s << "the final decay over the last " << cfg.settings.get(kCooldown)
              << " of the steps moves with --iters, so only runs that have not reached either run's decay can change --iters";
            return s.str();
          }};
}

}  // namespace ag::train
