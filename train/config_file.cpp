#include "train/config_file.h"

#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

namespace ag::train {

namespace {
std::string where(const std::string& source, const toml::node& n) {
  return source + ":" + std::to_string(n.source().begin.line);
}

// One value of a TOML file into a field of type T.
template <class T>
void assign(T& dst, const toml::node& n, const std::string& key, const std::string& source) {
  auto fail = [&](const std::string& want) {
    throw std::runtime_error(where(source, n) + ": '" + key + "' must be " + want);
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (!n.is_boolean()) fail("true or false");
    dst = n.as_boolean()->get();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!n.is_string()) fail("a string");
    dst = n.as_string()->get();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (n.is_floating_point()) dst = n.as_floating_point()->get();
    else if (n.is_integer()) dst = static_cast<T>(n.as_integer()->get());
    else fail("a number");
  } else {
    if (!n.is_integer()) fail("an integer");
    const int64_t v = n.as_integer()->get();
    if constexpr (std::is_unsigned_v<T>) {
      if (v < 0) fail("an integer ≥ 0");
    } else if constexpr (sizeof(T) < sizeof(int64_t)) {
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) fail("an integer in range");
    }
    dst = static_cast<T>(v);
  }
}

// A value as TOML: strings quoted and escaped by toml++, doubles as floats that read back exactly.
template <class T>
std::string toml_value(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    std::ostringstream os;
    os << toml::value<std::string>(v);
    return os.str();
  } else if constexpr (std::is_floating_point_v<T>) {
    std::string s = format_value(v);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // "1" would read back as an integer
    return s;
  } else {
    return format_value(v);
  }
}
}  // namespace

std::set<std::string> parse_config_toml(const std::string& text, const std::string& source, TrainConfig& cfg) {
  toml::table table;
  try {
    table = toml::parse(std::string_view(text), std::string_view(source));
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(source + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  std::set<std::string> given;
  visit_fields(cfg, [&](auto& v, const FieldInfo& f) {
    if (const toml::node* n = table.get(f.flag)) {
      assign(v, *n, f.flag, source);
      given.insert(f.flag);
    }
  });
  for (auto&& [key, node] : table)
    if (!given.count(std::string(key.str())))
      throw std::runtime_error(where(source, node) + ": unknown key '" + std::string(key.str()) +
                               "' (the keys are the flags of attograd train, without --; see attograd train --help)");
  return given;
}

std::set<std::string> read_config_toml(const std::string& path, TrainConfig& cfg) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the configuration file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config_toml(ss.str(), path, cfg);
}

std::string config_to_toml(const TrainConfig& cfg) {
  std::string out =
      "# attograd train: the run's configuration, every field resolved (defaults, --config file, flags).\n"
      "# Keys are the flags of `attograd train`; `attograd train --config THIS_FILE` runs it again.\n";
  out += "# vocab_size " + std::to_string(cfg.model.vocab_size) + " (from the corpus)\n";
  visit_fields(cfg, [&](const auto& v, const FieldInfo& f) {
    out += std::string("\n# ") + f.help + "\n" + f.flag + " = " + toml_value(v) + "\n";
  });
  return out;
}

void write_config_toml(const std::string& path, const TrainConfig& cfg) {
  std::ofstream f(path, std::ios::trunc | std::ios::binary);
  f << config_to_toml(cfg);
  if (!f.flush()) throw std::runtime_error(path + ": cannot write the run's configuration");
}

}  // namespace ag::train
