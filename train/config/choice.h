// Fields of the run configuration that take one of a few names (--precision fp32|bf16, --gemm
// auto|openblas|onednn): an enum in TrainConfig, its names listed once here. The flag and TOML
// readers parse a name into the enum (parse_choice), JSON and config files write the name
// (choice_name); nothing else sees the names.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "autograd/autocast.h"
#include "autograd/kernels/gemm_provider.h"

namespace ag::train {

// --gemm: a provider, or auto (measured once per machine and model shape, see
// train/gemm_choice.h); a run records the provider auto chose, never auto.
enum class GemmChoice : uint8_t { Auto, OpenBLAS, OneDNN };

template <class E> struct ChoiceNames;  // specialised below: `static constexpr std::array names` of {value, name}
template <> struct ChoiceNames<Precision> {
  static constexpr std::array<std::pair<Precision, const char*>, 2> names = {
      {{Precision::FP32, "fp32"}, {Precision::BF16, "bf16"}}};
};
template <> struct ChoiceNames<GemmChoice> {
  static constexpr std::array<std::pair<GemmChoice, const char*>, 3> names = {
      {{GemmChoice::Auto, "auto"}, {GemmChoice::OpenBLAS, "openblas"}, {GemmChoice::OneDNN, "onednn"}}};
};

template <class T>
concept Choice = requires { ChoiceNames<T>::names; };

template <Choice E>
const char* choice_name(E e) {
  for (const auto& [v, name] : ChoiceNames<E>::names)
    if (v == e) return name;
  return "?";
}

template <Choice E>
std::optional<E> parse_choice(std::string_view text) {
  for (const auto& [v, name] : ChoiceNames<E>::names)
    if (text == name) return v;
  return std::nullopt;
}

// "fp32 or bf16", "auto, openblas or onednn": for messages.
template <Choice E>
std::string choice_list() {
  std::string s;
  const auto& names = ChoiceNames<E>::names;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i].second);
  return s;
}

template <Choice E>
std::string format_value(E e) {
  return choice_name(e);
}

// The provider a --gemm choice names (not Auto: resolve it first, train/gemm_choice.h).
kernels::GemmProvider gemm_provider_of(GemmChoice g);
GemmChoice gemm_choice_of(kernels::GemmProvider p);

}  // namespace ag::train
