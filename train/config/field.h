// What a field of the run configuration is, besides its value: its flag, its JSON key, its help,
// what --resume does with it and which values it accepts. The field table (train/config/run_config.h)
// and the settings of the registered choices (train/config/choice.h) both describe their fields so.
#pragma once

namespace ag::train {

// What `attograd train --resume DIR` does with a field.
enum class OnResume {
  Refuse,    // part of the run: saved, restored, and the flag is refused with --resume
  Override,  // saved and restored, but the flag may replace it (where the corpus now is; iters,
             // checked by check_iters_change in train/trainer.h)
  Fresh,     // how this process runs (threads, output): this command line's value, saved only for the record
};

// The values a field accepts (train/config/config_check.h); a double must be finite besides.
enum class Check {
  Any,
  Required,     // a non-empty string
  Positive,     // > 0
  NonNegative,  // ≥ 0
  Fraction,     // in [0, 1)
  UnitInterval, // in [0, 1]
  CountOrAll,   // a positive count, or 0 written "all" (the flag and TOML readers take the word)
  Threads,      // in 0..parallel::kMaxThreads
  Timeout,      // 0 (wait forever) or ≥ 1 second (a shorter one would count a rank lost between two heartbeats)
};

// One field, as the visitors of the configuration hand it over with a reference to its value.
struct FieldInfo {
  const char* flag;  // the command-line flag, without "--"
  const char* key;   // the JSON key (the member's name)
  const char* help;
  OnResume on_resume;
  Check check;  // Any for the model's fields: the model validates them (models/registry.h)
};

}  // namespace ag::train
