#include "cli/train_flags.h"

#include <type_traits>

#include "cli/commands.h"
#include "models/registry.h"
#include "train/config/config_error.h"
#include "train/config/config_file.h"

namespace ag::cli {

namespace {
// Booleans are switches (--skip-nonfinite, or --skip-nonfinite=false); strings without a
// default show none; a choice is a name, its help listing the rows; a count-or-all is text.
template <class T>
void add_flag(cxxopts::OptionAdder& add, const T& def, const train::FieldInfo& f) {
  std::shared_ptr<const cxxopts::Value> v;
  std::string help = f.help;
  if constexpr (train::ChoiceField<T>) {
    v = cxxopts::value<std::string>()->default_value(train::choice_name(def));
    if (const std::string rows = train::choice_help<T>(); !rows.empty()) help += ": " + rows;
  } else if constexpr (std::is_same_v<T, bool>) {
    v = cxxopts::value<bool>()->default_value(train::format_value(def))->implicit_value("true");
  } else if constexpr (std::is_same_v<T, std::string>) {
    v = def.empty() ? cxxopts::value<T>() : cxxopts::value<T>()->default_value(def);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (f.check == train::Check::CountOrAll) v = cxxopts::value<std::string>()->default_value(train::format_count_or_all(def));
    else v = cxxopts::value<T>()->default_value(train::format_value(def));
  } else {
    v = cxxopts::value<T>()->default_value(train::format_value(def));
  }
  add(f.flag, help, v);
}
}  // namespace

void add_train_flags(cxxopts::Options& options) {
  const train::TrainConfig defaults;
  auto add = options.add_options();
  train::visit_fields(defaults, [&](const auto& def, const train::FieldInfo& f) { add_flag(add, def, f); });
  add("config", "read the configuration from this TOML file (keys: these flags without --, as in configs/*.toml); flags given here override it",
      cxxopts::value<std::string>());
  add("resume", "continue the run in this folder exactly (from its train_state.safetensors)", cxxopts::value<std::string>());
  add("h,help", "show this help");
}

TrainFlags read_train_flags(const cxxopts::ParseResult& r) {
  TrainFlags out;  // the defaults, then the file, then the flags given
  if (r.count("config")) {
    if (r.count("resume")) throw UsageError("--config cannot be combined with --resume: the run continues with its saved configuration");
    try {
      out.from_file = train::read_config_toml(r["config"].as<std::string>(), out.config);
    } catch (const train::ConfigError& e) {  // a value out of range, as on the command line (eval-iters)
      throw UsageError(e.what());
    }
  }
  train::visit_fields(out.config, [&](auto& v, const train::FieldInfo& f) {
    if (!r.count(f.flag)) return;
    out.given.insert(f.flag);
    using T = std::remove_reference_t<decltype(v)>;
    if constexpr (train::ChoiceField<T>) {
      const std::string text = r[f.flag].as<std::string>();
      const auto parsed = train::parse_choice<T>(text);
      if (!parsed) throw UsageError(std::string("--") + f.flag + " must be " + train::choice_list<T>() + ", got '" + text + "'");
      v = *parsed;
    } else {
      if constexpr (std::is_same_v<T, int64_t>) {
        if (f.check == train::Check::CountOrAll) {
          try {
            v = train::parse_count_or_all(r[f.flag].as<std::string>(), f.flag);
          } catch (const std::invalid_argument& e) {
            throw UsageError(e.what());
          }
          return;
        }
      }
      v = r[f.flag].as<T>();
    }
  });
  return out;
}

void refuse_run_flags_on_resume(const TrainFlags& flags) {
  train::visit_fields(flags.config, [&](const auto&, const train::FieldInfo& f) {
    if (f.on_resume == train::OnResume::Refuse && flags.given.count(f.flag))
      throw UsageError(std::string("--") + f.flag +
                       " cannot be combined with --resume: the run continues with its saved configuration");
  });
}

void refuse_model_flags_that_mean_nothing(const TrainFlags& flags) {
  const models::ModelConfig defaults;
  if (!flags.config.init_from.empty()) {
    models::visit_model_fields(flags.config.model, [&](const auto&, const char*, const char* flag) {
      if (std::string(flag) != "dropout" && (flags.given.count(flag) || flags.from_file.count(flag)))
        throw UsageError(std::string("--") + flag + " cannot be combined with --init-from: the model comes from the checkpoint");
    });
    return;
  }
  const models::ModelEntry* entry = nullptr;
  try {
    entry = &models::find_model(flags.config.model.name);
  } catch (const std::invalid_argument&) {
    return;  // an unknown --model: the run's validation says so, listing the known ones
  }
  std::string its_flags;
  models::visit_model_fields(defaults, [&](const auto&, const char* key, const char* flag) {
    if (entry->reads(key)) its_flags += std::string(its_flags.empty() ? "" : ", ") + "--" + flag;
  });
  auto check = [&](const auto& v, const auto& def, const char* key, const char* flag) {
    if (std::string(key) == "name" || entry->reads(key)) return;
    const bool given = flags.given.count(flag) > 0, in_file = flags.from_file.count(flag) && !(v == def);
    if (given || in_file)
      throw UsageError((given ? std::string("--") + flag : std::string("--config: ") + flag + " = " + train::format_value(v)) +
                       ": the model " + entry->name + " has no such setting (it takes " + its_flags + ")");
  };
#define AG_CHECK_MODEL_FLAG(type, member, flag, def, help) check(flags.config.model.member, defaults.member, #member, flag);
  AG_MODEL_FIELDS(AG_CHECK_MODEL_FLAG)
#undef AG_CHECK_MODEL_FLAG
}

}  // namespace ag::cli
