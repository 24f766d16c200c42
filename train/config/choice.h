// Fields of the run configuration that name one of several things. Two kinds, read and written
// through one set of functions (parse_choice, choice_name, choice_list, choice_values; the
// concept ChoiceField), so that the flag, TOML and JSON readers have one branch for both:
//  - a Choice<Entry> (--optimizer adamw|muon, --schedule cosine|wsd): a row of Entry's registry,
//    which brings its behaviour and its own settings; a program may add rows;
//  - an enum with its names in ChoiceNames<E> (--precision fp32|bf16, --gemm auto|openblas|onednn):
//    a fixed set that the kernels switch on.
// Only the readers turn a name into a value or a value back into its name; everything else asks
// the row (cfg.optimizer->build(model, cfg)) or switches on the enum, never compares names.
//
// A row has a name, a line of help, and its own settings: numbers only it reads (Muon's
// --muon-lr, WSD's --cooldown), which become flags, config-file keys and saved fields as every
// field of the table does. A registry holds the rows its file lists (Registry<Entry>::builtin,
// e.g. train/optimizers/registry.cpp), then any a program adds (Registry<Entry>::add).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/random.h"
#include "train/config/field.h"

namespace ag::train {

struct TrainConfig;

// A number one row of a registry reads: its flag, JSON key, default, help and rule. Only a run
// that chose that row may set it to anything but its default (train/config/config_check.cpp).
struct Setting {
  const char* flag;
  const char* key;
  double default_value;
  const char* help;
  Check check = Check::Any;
};

// The settings' values in a configuration, by key: a setting never set has its default.
class Settings {
 public:
  const double& get(const Setting& s) const {
    const auto it = values_.find(s.key);
    return it == values_.end() ? s.default_value : it->second;
  }
  double& ref(const Setting& s) { return values_.try_emplace(s.key, s.default_value).first->second; }

 private:
  std::map<std::string, double, std::less<>> values_;
};

template <class Entry>
class Registry {
 public:
  // The built-in rows (defined by Entry's registry file), then those added, in order; references
  // stay valid as rows are added.
  static const std::deque<Entry>& rows() { return storage(); }
  // Adds a row: a program's own optimizer or schedule. Throws std::invalid_argument when its name
  // or a flag of its settings is taken.
  static const Entry& add(Entry e) {
    if (e.name.empty()) throw std::invalid_argument("a row of a registry needs a name");
    for (const Entry& r : storage()) {
      if (r.name == e.name) throw std::invalid_argument("'" + e.name + "' is registered already");
      for (const Setting& mine : e.settings)
        for (const Setting& theirs : r.settings)
          if (std::string_view(mine.flag) == theirs.flag || std::string_view(mine.key) == theirs.key)
            throw std::invalid_argument("'" + e.name + "': the setting --" + mine.flag + " is " + r.name + "'s already");
    }
    storage().push_back(std::move(e));
    return storage().back();
  }
  static const Entry* find(std::string_view name) {
    for (const Entry& r : storage())
      if (r.name == name) return &r;
    return nullptr;
  }
  // "adamw or muon", "cosine, wsd or const": for messages.
  static std::string names() {
    std::string s;
    const auto& rows = storage();
    for (size_t i = 0; i < rows.size(); ++i) s += (i == 0 ? "" : i + 1 == rows.size() ? " or " : ", ") + rows[i].name;
    return s;
  }

 private:
  static std::vector<Entry> builtin();  // specialised in Entry's registry file
  static std::deque<Entry>& storage() {
    static std::deque<Entry> rows = [] {
      std::vector<Entry> b = builtin();
      return std::deque<Entry>(std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
    }();
    return rows;
  }
};

// The row a field names. Made from a name (the readers; TrainConfig's defaults; tests), it is a
// row of the registry or an error listing the names.
template <class Entry>
class Choice {
 public:
  using Row = Entry;
  explicit Choice(std::string_view name) : row_(Registry<Entry>::find(name)) {
    if (!row_) throw std::invalid_argument("'" + std::string(name) + "' is none of " + Registry<Entry>::names());
  }
  explicit Choice(const Entry& row) : row_(&row) {}
  const Entry& operator*() const { return *row_; }
  const Entry* operator->() const { return row_; }
  const std::string& name() const { return row_->name; }
  friend bool operator==(const Choice& a, const Choice& b) { return a.row_ == b.row_; }

 private:
  const Entry* row_;
};

// --gemm: a provider, or auto (measured once per machine and model shape, see
// train/gemm_choice.h); a run records the provider auto chose, never auto.
enum class GemmChoice : uint8_t { Auto, OpenBLAS, OneDNN };
// --gemm-bf16: which of oneDNN's interfaces runs a bf16 run's native GEMMs (gemm_provider.h:
// Bf16Api), or auto (timed, see train/bf16_api_choice.h); a run records the one it used.
enum class GemmBf16Choice : uint8_t { Auto, Matmul, Gemm };

template <class E> struct ChoiceNames;  // specialised below: `static constexpr std::array names` of {value, name}
template <> struct ChoiceNames<Precision> {
  static constexpr std::array<std::pair<Precision, const char*>, 2> names = {
      {{Precision::FP32, "fp32"}, {Precision::BF16, "bf16"}}};
};
template <> struct ChoiceNames<GemmChoice> {
  static constexpr std::array<std::pair<GemmChoice, const char*>, 3> names = {
      {{GemmChoice::Auto, "auto"}, {GemmChoice::OpenBLAS, "openblas"}, {GemmChoice::OneDNN, "onednn"}}};
};
template <> struct ChoiceNames<GemmBf16Choice> {
  static constexpr std::array<std::pair<GemmBf16Choice, const char*>, 3> names = {
      {{GemmBf16Choice::Auto, "auto"}, {GemmBf16Choice::Matmul, "matmul"}, {GemmBf16Choice::Gemm, "gemm"}}};
};
template <> struct ChoiceNames<GeneratorKind> {
  static constexpr std::array<std::pair<GeneratorKind, const char*>, 2> names = {
      {{GeneratorKind::Attograd, "attograd"}, {GeneratorKind::Torch, "torch"}}};
};

template <class T>
struct is_choice : std::false_type {};
template <class Entry>
struct is_choice<Choice<Entry>> : std::true_type {};
template <class T>
concept RegistryChoice = is_choice<std::remove_cv_t<T>>::value;
template <class T>
concept EnumChoice = requires { ChoiceNames<std::remove_cv_t<T>>::names; };
// A field that takes one of several names, of either kind: what the readers test for.
template <class T>
concept ChoiceField = RegistryChoice<T> || EnumChoice<T>;

// Every value the field may take, in the order of its names.
template <ChoiceField C>
std::vector<C> choice_values() {
  std::vector<C> out;
  if constexpr (RegistryChoice<C>) {
    for (const auto& row : Registry<typename C::Row>::rows()) out.push_back(C(row));
  } else {
    for (const auto& [v, name] : ChoiceNames<C>::names) out.push_back(v);
  }
  return out;
}

template <ChoiceField C>
std::string choice_name(const C& c) {
  if constexpr (RegistryChoice<C>) {
    return c.name();
  } else {
    for (const auto& [v, name] : ChoiceNames<C>::names)
      if (v == c) return name;
    return "?";
  }
}

template <ChoiceField C>
std::optional<C> parse_choice(std::string_view text) {
  for (const C& c : choice_values<C>())
    if (choice_name(c) == text) return c;
  return std::nullopt;
}

// "adamw or muon", "auto, openblas or onednn": for messages.
template <ChoiceField C>
std::string choice_list() {
  const std::vector<C> values = choice_values<C>();
  std::string s;
  for (size_t i = 0; i < values.size(); ++i) s += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + choice_name(values[i]);
  return s;
}

// What --help adds to the field's own help: each row's name and help ("adamw: nanoGPT's ...;
// muon: ..."); nothing for an enum, whose field's help explains its names.
template <ChoiceField C>
std::string choice_help() {
  std::string s;
  if constexpr (RegistryChoice<C>)
    for (const auto& r : Registry<typename C::Row>::rows()) s += (s.empty() ? "" : "; ") + r.name + ": " + r.help;
  return s;
}

template <ChoiceField C>
std::string format_value(const C& c) {
  return choice_name(c);
}

// The provider a --gemm choice names (not Auto: resolve it first, train/gemm_choice.h).
kernels::GemmProvider gemm_provider_of(GemmChoice g);
GemmChoice gemm_choice_of(kernels::GemmProvider p);
// The interface a --gemm-bf16 choice names (not Auto), and back.
kernels::Bf16Api bf16_api_of(GemmBf16Choice g);
GemmBf16Choice gemm_bf16_choice_of(kernels::Bf16Api a);

}  // namespace ag::train
