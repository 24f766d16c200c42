#include "train/config/config_check.h"

#include <cmath>
#include <string>
#include <type_traits>

#include "base/checked.h"
#include "autograd/parallel.h"
#include "data/text_file.h"
#include "train/config/config_error.h"
#include "train/memory_check.h"

namespace ag::train {

namespace {
// The row's rule for one value; an error names the flag.
template <class T>
void check_field(const T& v, const FieldInfo& f) {
  const std::string flag = std::string("train: --") + f.flag;
  if constexpr (ChoiceField<T>) {
    return;  // a row or a named enum value: valid once read
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (f.check == Check::Required && v.empty())
      throw ConfigError(flag + " is required (or " + f.flag + " = \"...\" in --config)");
  } else if constexpr (!std::is_same_v<T, bool>) {
    if constexpr (std::is_floating_point_v<T>)
      if (!std::isfinite(v)) {
        const std::string shown = std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
        throw ConfigError(flag + " must be a finite number, got " + shown);
      }
    const double x = static_cast<double>(v);
    switch (f.check) {
      case Check::Any:
      case Check::Required: break;
      case Check::Positive:
        if (!(x > 0)) throw ConfigError(flag + " must be positive");
        break;
      case Check::NonNegative:
        if (!(x >= 0)) throw ConfigError(flag + " must be ≥ 0");
        break;
      case Check::Fraction:
        if (!(x >= 0 && x < 1)) throw ConfigError(flag + " must be in [0, 1)");
        break;
      case Check::UnitInterval:
        if (!(x >= 0 && x <= 1)) throw ConfigError(flag + " must be in [0, 1]");
        break;
      case Check::CountOrAll:  // 0 holds "all": the rule the user reads is the command line's
        if (!(x >= 0)) throw ConfigError(count_or_all_rule(flag, std::to_string(static_cast<int64_t>(x))));
        break;
      case Check::Threads:
        if (x < 0 || x > parallel::kMaxThreads)
          throw ConfigError(flag + " must be in 0.." + std::to_string(parallel::kMaxThreads) + " (0: one per core)");
        break;
      case Check::Timeout:
        if (!(x == 0 || x >= 1)) throw ConfigError(flag + " must be 0 (wait forever) or at least 1 second");
        break;
    }
  }
}
}  // namespace

const models::ModelEntry& validate_config(const TrainConfig& c, int64_t ranks) {
  visit_fields(c, [](const auto& v, const FieldInfo& f) { check_field(v, f); });
  // Checks across fields. --profile-steps: the steps after the first, within the run (the
  // range in one message, whichever side is broken).
  if (c.profile_steps < 0 || (c.profile_steps > 0 && c.profile_steps >= c.iters))
    throw ConfigError("train: --profile-steps must be in 0..--iters - 1 (the first step is a warm-up, not profiled), got " +
                      std::to_string(c.profile_steps));
  // A setting of a choice the run did not make means nothing: at its default only.
  for (const RegisteredSetting& s : registered_settings())
    if (!s.chosen(c) && c.settings.get(*s.setting) != s.setting->default_value)
      throw ConfigError(std::string("train: --") + s.setting->flag + " is a setting of --" + s.choice_flag + " " + s.row +
                        " (this run's is " + s.chosen_name(c) + ")");
  // Every rank gets batch / ranks rows in grad_accum micro-batches.
  int64_t parts = 0;
  if (__builtin_mul_overflow(ranks, c.grad_accum, &parts) || c.batch_size % parts != 0)
    throw ConfigError("train: --batch " + std::to_string(c.batch_size) + " must be divisible by ranks × --grad-accum = " +
                      std::to_string(ranks) + " × " + std::to_string(c.grad_accum) +
                      (parts > 0 ? " = " + std::to_string(parts) + " (the batch is global; each micro-batch gets batch / " +
                                       std::to_string(parts) + " rows)"
                                 : std::string(", which does not fit 64 bits")));
  // The warmups start from a shape no larger than the full one; the batch's splits as --batch's.
  if (c.block_warmup > 0 && c.block_start > c.model.block_size)
    throw ConfigError("train: --block-start " + std::to_string(c.block_start) + " must be at most --block " +
                      std::to_string(c.model.block_size) + " (the sequence length --block-warmup rises to)");
  if (c.batch_warmup > 0 && (c.batch_start > c.batch_size || c.batch_start % parts != 0))
    throw ConfigError("train: --batch-start " + std::to_string(c.batch_start) + " must be at most --batch " +
                      std::to_string(c.batch_size) + " and divisible by ranks × --grad-accum = " + std::to_string(parts));
  // Each split needs block + 1 characters of a corpus of at most kMaxTextFileBytes.
  if (c.model.block_size > data::kMaxTextFileBytes / 10)
    throw ConfigError("train: --block " + std::to_string(c.model.block_size) + " is larger than any corpus can serve (at most " +
                      std::to_string(data::kMaxTextFileBytes) + " bytes, split 90/10)");
  try {
    return models::find_model(c.model.name);  // an unknown --model: the message lists the known ones
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("--model: ") + e.what());
  }
}

void check_model(const models::ModelEntry& entry, const TrainConfig& c) {
  try {
    entry.validate(c.model);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
  require_training_fits(entry, c);
}

}  // namespace ag::train
