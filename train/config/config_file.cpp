#include "train/config/config_file.h"

#include <cctype>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "base/atomic_file.h"
#include "base/input_file.h"
#include "train/config/config_error.h"

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

namespace ag::train {

namespace {
std::string where(const std::string& source, const toml::node& n) {
  return source + ":" + std::to_string(n.source().begin.line);
}

// One value of a TOML file into a field of type T.
template <class T>
void assign(T& dst, const toml::node& n, const FieldInfo& f, const std::string& source) {
  const std::string key = f.flag;
  auto fail = [&](const std::string& want) {
    throw std::runtime_error(where(source, n) + ": '" + key + "' must be " + want);
  };
  if constexpr (ChoiceField<T>) {
    const auto parsed = n.is_string() ? parse_choice<T>(n.as_string()->get()) : std::nullopt;
    if (!parsed) fail(choice_list<T>() + " (a string)");
    dst = *parsed;
  } else if constexpr (std::is_same_v<T, bool>) {
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
    if constexpr (std::is_same_v<T, int64_t>) {
      if (f.check == Check::CountOrAll) {  // the command line's rule and message (train/config/run_config.h)
        const std::string given = n.is_string()    ? n.as_string()->get()
                                  : n.is_integer() ? std::to_string(n.as_integer()->get())
                                                   : "a " + std::string(n.is_floating_point() ? "float" : "non-number");
        if (!(n.is_string() && given == "all") && !(n.is_integer() && n.as_integer()->get() > 0))
          // A value out of range, as on the command line: a usage error (exit status 2).
          throw ConfigError(where(source, n) + ": " + count_or_all_rule("'" + key + "'", given) +
                            (given == "0" ? " (a config.toml written before this rule said 0 for all)" : ""));
        dst = n.is_string() ? kEvalWholeSplit : n.as_integer()->get();
        return;
      }
    }
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

// A value as TOML: strings quoted and escaped by toml++, doubles as floats that read back exactly,
// a choice as its name, a count-or-all's 0 as "all" (the one way to say it).
template <class T>
std::string toml_value(const T& v, const FieldInfo& f) {
  if constexpr (std::is_same_v<T, std::string> || ChoiceField<T>) {
    std::ostringstream os;
    os << toml::value<std::string>(format_value(v));
    return os.str();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return f.check == Check::CountOrAll && v == kEvalWholeSplit ? "\"all\"" : format_value(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    std::string s = format_value(v);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // "1" would read back as an integer
    return s;
  } else {
    return format_value(v);
  }
}

// toml++ builds a dotted key `a.a.a.….a = 1` as that many nested tables, recursively: 300,000
// levels overflow the stack, in parsing and again in destroying the tables. It bounds the
// nesting of arrays and inline tables (256), not that of dotted keys and table headers, so the
// text is scanned first: the open brackets plus the dots of the key being read may not exceed
// kMaxNesting. The scan skips strings and comments as TOML does, so quoted dots do not count.
// A configuration is flat (key = value): 64 is far beyond any file attograd reads.
constexpr int kMaxNesting = 64;

void check_nesting(std::string_view t, const std::string& source) {
  int line = 1, open = 0, dots = 0;
  bool after_part = false, after_dot = false;  // the last thing read: a key part, or a dot after one
  auto refuse = [&] {
    throw std::runtime_error(source + ":" + std::to_string(line) + ": nests deeper than " + std::to_string(kMaxNesting) +
                             " levels (dotted keys, tables and arrays); a configuration is flat: key = value");
  };
  auto key_part = [&] {  // a bare or quoted key part (or a value, which ends the chain later)
    if (!after_dot) dots = 0;
    after_part = true, after_dot = false;
  };
  const auto bare = [](unsigned char c) { return std::isalnum(c) || c == '_' || c == '-' || c >= 0x80; };
  size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '\n') {
      ++line, ++i;
      after_part = after_dot = false, dots = 0;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '#') {
      while (i < t.size() && t[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      const bool basic = c == '"';
      if (t.substr(i, 3) == std::string(3, c)) {  // multi-line: up to the next three quotes (and up to 2 more)
        i += 3;
        while (i < t.size() && t.substr(i, 3) != std::string(3, c)) {
          if (t[i] == '\n') ++line;
          i += basic && t[i] == '\\' ? 2 : 1;
        }
        while (i < t.size() && t[i] == c) ++i;
      } else {  // one line: up to the closing quote (a newline first is toml++'s error to report)
        ++i;
        while (i < t.size() && t[i] != c && t[i] != '\n') i += basic && t[i] == '\\' ? 2 : 1;
        if (i < t.size() && t[i] == c) ++i;
      }
      key_part();
    } else if (bare(static_cast<unsigned char>(c))) {
      while (i < t.size() && bare(static_cast<unsigned char>(t[i]))) ++i;
      key_part();
    } else if (c == '.' && after_part) {
      ++i, ++dots;
      after_part = false, after_dot = true;
      if (open + dots > kMaxNesting) refuse();
    } else {
      if (c == '[' || c == '{') {
        if (++open + dots > kMaxNesting) refuse();
      } else if ((c == ']' || c == '}') && open > 0) {
        --open;
      }
      ++i;
      after_part = after_dot = false, dots = 0;
    }
  }
}

// Of the model's fields, those --init-from takes from the checkpoint (all but dropout, which
// nanoGPT lets a fine-tuning run change). config.toml writes them as comments for such a run,
// so that `--config` accepts the file back.
bool model_field_from_checkpoint(const std::string& flag) {
  static const std::set<std::string> fields = [] {
    std::set<std::string> s;
    const models::ModelConfig defaults;
    models::visit_model_fields(defaults, [&](const auto&, const char*, const char* f) { s.insert(f); });
    s.erase("dropout");
    return s;
  }();
  return fields.count(flag) > 0;
}
}  // namespace

std::set<std::string> parse_config_toml(const std::string& text, const std::string& source, TrainConfig& cfg) {
  check_nesting(text, source);
  toml::table table;
  try {
    table = toml::parse(std::string_view(text), std::string_view(source));
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(source + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  std::set<std::string> given;
  visit_fields(cfg, [&](auto& v, const FieldInfo& f) {
    if (const toml::node* n = table.get(f.flag)) {
      assign(v, *n, f, source);
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
  // A configuration is a few dozen lines: 1 MiB leaves room for any comments.
  return parse_config_toml(read_input_file({path, path, kMaxConfigBytes, "a configuration file may have at most 1 MiB", ""}),
                           path, cfg);
}

std::string config_to_toml(const TrainConfig& cfg) {
  std::string out =
      "# attograd train: the run's configuration, every field resolved (defaults, --config file, flags).\n"
      "# Keys are the flags of `attograd train`; `attograd train --config THIS_FILE` runs it again.\n";
  out += "# vocab_size " + std::to_string(cfg.model.vocab_size) + " (from the corpus)\n";
  const bool init = !cfg.init_from.empty();
  if (init) out += "# init-from: the model's fields (but dropout) are the checkpoint's, shown as comments\n";
  visit_fields(cfg, [&](const auto& v, const FieldInfo& f) {
    const bool comment = init && model_field_from_checkpoint(f.flag);
    out += std::string("\n# ") + f.help + "\n" + (comment ? "# " : "") + f.flag + " = " + toml_value(v, f) + "\n";
  });
  return out;
}

void write_config_toml(const std::string& path, const TrainConfig& cfg) {
  write_file_atomically(path, config_to_toml(cfg));  // never through a symbolic link; checked
}

}  // namespace ag::train
