#include "train/config/run_config.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

namespace ag::train {

using nlohmann::json;

std::string format_value(double v) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}
std::string format_value(int64_t v) { return std::to_string(v); }

std::string count_or_all_rule(const std::string& name, const std::string& given) {
  return name + " must be a positive count or all, got '" + given + "'";
}

int64_t parse_count_or_all(const std::string& text, const char* flag) {
  if (text == "all") return kEvalWholeSplit;
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || text.empty() || v <= 0) throw std::invalid_argument(count_or_all_rule(std::string("--") + flag, text));
  return v;
}

std::string format_count_or_all(int64_t n) { return n == kEvalWholeSplit ? "all" : std::to_string(n); }

namespace {
const Setting& setting_of_flag(std::string_view flag) {
  for (const RegisteredSetting& s : registered_settings())
    if (flag == s.setting->flag) return *s.setting;
  throw std::invalid_argument("no registered optimizer or schedule has the setting --" + std::string(flag));
}
}  // namespace

double& setting(TrainConfig& c, std::string_view flag) { return c.settings.ref(setting_of_flag(flag)); }
double setting(const TrainConfig& c, std::string_view flag) { return c.settings.get(setting_of_flag(flag)); }

std::vector<RegisteredSetting> registered_settings() {
  std::vector<RegisteredSetting> out;
  for (const OptimizerEntry& row : OptimizerRegistry::rows())
    for (const Setting& s : row.settings)
      out.push_back({&s, "optimizer", row.name, [&row](const TrainConfig& c) { return &*c.optimizer == &row; },
                     [](const TrainConfig& c) { return c.optimizer.name(); }});
  for (const ScheduleEntry& row : ScheduleRegistry::rows())
    for (const Setting& s : row.settings)
      out.push_back({&s, "schedule", row.name, [&row](const TrainConfig& c) { return &*c.schedule == &row; },
                     [](const TrainConfig& c) { return c.schedule.name(); }});
  return out;
}
std::string format_value(uint64_t v) { return std::to_string(v); }
std::string format_value(int v) { return std::to_string(v); }
std::string format_value(bool v) { return v ? "true" : "false"; }

kernels::GemmProvider gemm_provider_of(GemmChoice g) {
  if (g == GemmChoice::Auto) throw std::logic_error("gemm_provider_of: --gemm auto is resolved before the run starts");
  return g == GemmChoice::OneDNN ? kernels::GemmProvider::OneDNN : kernels::GemmProvider::OpenBLAS;
}
GemmChoice gemm_choice_of(kernels::GemmProvider p) {
  return p == kernels::GemmProvider::OneDNN ? GemmChoice::OneDNN : GemmChoice::OpenBLAS;
}

kernels::Bf16Api bf16_api_of(GemmBf16Choice g) {
  if (g == GemmBf16Choice::Auto) throw std::logic_error("bf16_api_of: --gemm-bf16 auto is resolved before the run starts");
  return g == GemmBf16Choice::Matmul ? kernels::Bf16Api::Matmul : kernels::Bf16Api::Gemm;
}
GemmBf16Choice gemm_bf16_choice_of(kernels::Bf16Api a) {
  return a == kernels::Bf16Api::Matmul ? GemmBf16Choice::Matmul : GemmBf16Choice::Gemm;
}

namespace {
// The keys of the first train states. Every later field may be absent from an older state;
// its default then reproduces how that run was made.
const std::set<std::string> kFirstFields = {
    "data_path", "n_layer",    "n_head",     "n_embd",    "block_size", "dropout",        "batch_size", "iters",
    "lr",        "min_lr",     "warmup",     "weight_decay", "beta1",   "beta2",          "grad_clip",  "eval_every",
    "eval_iters", "log_every", "seed",       "sample_tokens", "skip_nonfinite"};
}  // namespace

std::string config_to_json(const TrainConfig& c) {
  json j = json::object();
  visit_fields(c, [&](const auto& v, const FieldInfo& f) {
    if constexpr (ChoiceField<std::remove_cvref_t<decltype(v)>>) j[f.key] = choice_name(v);
    else j[f.key] = v;
  });
  j["vocab_size"] = c.model.vocab_size;
  return j.dump();
}

TrainConfig config_from_json(const std::string& text, const std::string& source) {
  try {
    const json j = json::parse(text);
    if (!j.is_object()) throw std::runtime_error("not a JSON object");
    TrainConfig c;
    visit_fields(c, [&](auto& v, const FieldInfo& f) {
      const auto it = j.find(f.key);
      if (it == j.end()) {
        if (kFirstFields.count(f.key)) throw std::runtime_error(std::string("the field '") + f.key + "' is missing");
        return;  // a field added later: the default
      }
      using T = std::remove_reference_t<decltype(v)>;
      if constexpr (ChoiceField<T>) {
        const auto parsed = it->is_string() ? parse_choice<T>(it->template get<std::string>()) : std::nullopt;
        if (!parsed)
          throw std::runtime_error(std::string("the field '") + f.key + "' must be " + choice_list<T>() + ", got " + it->dump());
        v = *parsed;
        return;
      }
      // nlohmann converts between number kinds (and a double to an int) in silence: check.
      const bool ok = std::is_same_v<T, bool>          ? it->is_boolean()
                      : std::is_same_v<T, std::string> ? it->is_string()
                      : std::is_floating_point_v<T>    ? it->is_number()
                      : std::is_unsigned_v<T>          ? it->is_number_unsigned()
                                                       : it->is_number_integer();
      if (!ok) throw std::runtime_error(std::string("the field '") + f.key + "' has the wrong type: " + it->dump());
      if constexpr (!ChoiceField<T>) v = it->template get<T>();
    });
    // A run from before --gemm ran its GEMMs on OpenBLAS: it resumes on it (auto might choose
    // another provider, and the run would not continue exactly).
    if (!j.contains("gemm")) c.gemm = GemmChoice::OpenBLAS;
    // A run from before --gemm-bf16 ran its native bf16 GEMMs through oneDNN's gemm API.
    if (!j.contains("gemm_bf16")) c.gemm_bf16 = GemmBf16Choice::Gemm;
    c.model.vocab_size = j.at("vocab_size").get<int64_t>();
    return c;
  } catch (const std::exception& e) {
    throw std::runtime_error(source + ": __metadata__ 'config' is not a valid run configuration: " + e.what());
  }
}

TrainConfig resumed_config(const TrainConfig& saved, const TrainConfig& now, const std::set<std::string>& given) {
  TrainConfig c = saved;
  for_each_field(
      [&](const FieldInfo& f, auto& dst, const auto& from_now) {
        if (f.on_resume == OnResume::Fresh || (f.on_resume == OnResume::Override && given.count(f.flag)))
          dst = from_now;
      },
      c, now);
  return c;
}

}  // namespace ag::train
