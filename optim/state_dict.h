// torch's optimizer.state_dict(), whatever the optimizer: what Optimizer::state_dict() gives
// and load_state_dict() takes, so that code holding only an optim::Optimizer (a training run,
// its train state) saves and restores any optimizer alike.
//
//   state         each parameter's state by its position over all groups in order, under
//                 torch's names ("step" as a 0-d float32 tensor, "exp_avg", "momentum_buffer", ...);
//                 a parameter no step has updated yet has none
//   param_groups  each group's options under torch's names ("lr", "betas", ...), the positions
//                 of its parameters, and initial_lr once a scheduler was made on the optimizer
//
// An optimizer's options struct lists its fields once, with torch's names (a static
// `for_each(options, f)`, see optim/adam.h); options_to_map / options_from_map turn it into
// the group's map and back, for any such struct: a field that is a std::optional is left out
// while unset.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "autograd/tensor.h"

namespace ag::optim {

// One option of a group, as torch's param_groups dicts hold it: a flag, a count, a number, a
// name, or a tuple of numbers (betas, ns_coefficients).
using OptionValue = std::variant<bool, int64_t, double, std::string, std::vector<double>>;

struct StateDict {
  struct Group {
    std::map<std::string, OptionValue> options;
    std::vector<int64_t> params;
    std::optional<double> initial_lr;
  };
  std::map<int64_t, std::map<std::string, Tensor>> state;
  std::vector<Group> param_groups;
};

namespace detail {
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_double_tuple : std::false_type {};
template <class... D>
struct is_double_tuple<std::tuple<D...>> : std::bool_constant<(std::is_same_v<D, double> && ...)> {};

template <class T>
OptionValue to_value(const T& v) {
  if constexpr (is_double_tuple<T>::value) {
    return std::apply([](auto... d) { return std::vector<double>{d...}; }, v);
  } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> || std::is_same_v<T, std::string>) {
    return v;
  } else {
    static_assert(std::is_same_v<T, int64_t>, "an option is a bool, int64_t, double, std::string or tuple of doubles");
    return v;
  }
}

// v into dst, or an error naming the option.
template <class T>
void from_value(T& dst, const OptionValue& v, const std::string& who) {
  const auto wrong = [&] { throw std::invalid_argument(who + " has the wrong type"); };
  if constexpr (is_double_tuple<T>::value) {
    const auto* d = std::get_if<std::vector<double>>(&v);
    if (!d || d->size() != std::tuple_size_v<T>)
      throw std::invalid_argument(who + " must be " + std::to_string(std::tuple_size_v<T>) + " numbers");
    std::apply([&](auto&... out) {
      size_t i = 0;
      ((out = (*d)[i++]), ...);
    }, dst);
  } else if constexpr (std::is_same_v<T, double>) {
    if (const auto* d = std::get_if<double>(&v)) dst = *d;
    else if (const auto* i = std::get_if<int64_t>(&v)) dst = static_cast<double>(*i);  // 1 read as 1.0
    else wrong();
  } else {
    const auto* x = std::get_if<T>(&v);
    if (!x) wrong();
    dst = *x;
  }
}
}  // namespace detail

// The options as a group's map (torch's names, from Options::for_each).
template <class Options>
std::map<std::string, OptionValue> options_to_map(const Options& o) {
  std::map<std::string, OptionValue> m;
  Options::for_each(o, [&](const char* name, const auto& field) {
    using T = std::decay_t<decltype(field)>;
    if constexpr (detail::is_optional<T>::value) {
      if (field) m[name] = detail::to_value(*field);
    } else {
      m[name] = detail::to_value(field);
    }
  });
  return m;
}

// A group's map as options: every key must be an option of Options, of its type; an option the
// map lacks keeps its value in `base` (a file written before the option existed). Throws
// std::invalid_argument starting with `who` ("AdamW.load_state_dict: group 1").
template <class Options>
Options options_from_map(const std::map<std::string, OptionValue>& m, Options base, const std::string& who) {
  size_t used = 0;
  Options::for_each(base, [&](const char* name, auto& field) {
    const auto it = m.find(name);
    if (it == m.end()) return;
    ++used;
    using T = std::decay_t<decltype(field)>;
    if constexpr (detail::is_optional<T>::value) {
      typename T::value_type v{};
      detail::from_value(v, it->second, who + ": option '" + name + "'");
      field = v;
    } else {
      detail::from_value(field, it->second, who + ": option '" + name + "'");
    }
  });
  if (used != m.size())
    for (const auto& entry : m) {  // (not a structured binding: the lambda captures it, which clang 14 refuses)
      const std::string& key = entry.first;
      bool known = false;
      Options::for_each(base, [&](const char* name, const auto&) { known = known || key == name; });
      if (!known) throw std::invalid_argument(who + ": unknown option '" + key + "'");
    }
  return base;
}

}  // namespace ag::optim
