// The learning-rate schedules `attograd train --schedule NAME` can follow, one row each. A
// schedule is a factor on every parameter group's initial_lr (its peak), step by step, for a run
// of a given step count: torch's LambdaLR (optim/lr_scheduler.h) applies it, so groups of
// different peaks (Muon's matrices, the embedding) follow one shape and get_lr(g) is exactly what
// the schedule set. The step count is the run's --iters, or the one --time-budget plans as the
// steps are timed (train/time_budget.h), so the decay follows the elapsed time.
//
// Adding a schedule: a file train/schedules/NAME.cpp that defines its row, and one line in the
// list of registry.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "train/config/choice.h"

namespace ag::train {

struct TrainConfig;

struct ScheduleEntry {
  std::string name;  // --schedule NAME
  std::string help;  // one line for --help
  std::vector<Setting> settings;
  // The factor on each group's initial_lr for step `it` (0-based) of a run of `iters` steps.
  std::function<double(const TrainConfig&, int64_t it, int64_t iters)> factor;
  // What the run's header says of it ("wsd schedule (the last 0.7 of the steps in the decay)").
  std::function<std::string(const TrainConfig&)> describe;
  // Why a step's rate depends on the step count, for a refused `--resume --iters N`: which
  // runs can change their count.
  std::function<std::string(const TrainConfig&)> iters_note;
};

using ScheduleRegistry = Registry<ScheduleEntry>;
using ScheduleChoice = Choice<ScheduleEntry>;
template <>
std::vector<ScheduleEntry> ScheduleRegistry::builtin();

// The factor of step `it` of the configuration's schedule, for a run of `iters` steps.
double schedule_factor(const TrainConfig& cfg, int64_t it, int64_t iters);

// What both built-in schedules share: a linear warmup of the first --warmup steps to the peak,
// step it at (it + 1)/(warmup + 1) of it, and a floor of --min-lr/--lr of each group's peak.
double warmup_factor(int64_t it, int64_t warmup);
double floor_factor(const TrainConfig& cfg);

}  // namespace ag::train
