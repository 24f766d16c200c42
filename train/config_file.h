// Run configurations as TOML files: `attograd train --config FILE`, the configs/ folder, and
// the config.toml a run folder keeps. The keys are the flags of `attograd train` (the rows of
// train/run_config.h): `layers = 4`, `min-lr = 1e-4`, `data = "input.txt"`.
//
// TOML through Debian's libtomlplusplus-dev, header-only inside config_file.cpp, so neither
// the library's users nor its link line ever see it.
#pragma once
#include <set>
#include <string>

#include "train/run_config.h"

namespace ag::train {

// Sets the fields FILE names on top of cfg and returns their flags. Throws
// std::runtime_error naming the file (and the line) for a syntax error, an unknown key, a
// value of the wrong type or out of range, or a nested table.
std::set<std::string> read_config_toml(const std::string& path, TrainConfig& cfg);
// The same, from text; `source` names it in errors.
std::set<std::string> parse_config_toml(const std::string& text, const std::string& source, TrainConfig& cfg);

// Every field, each under its help text as a comment, in the table's order; reads back
// exactly (doubles in the shortest form that does).
std::string config_to_toml(const TrainConfig& cfg);
// Writes config_to_toml(cfg) to path; throws std::runtime_error naming it when it cannot.
void write_config_toml(const std::string& path, const TrainConfig& cfg);

}  // namespace ag::train
