// Run configurations as TOML files: `attograd train --config FILE`, the configs/ folder, and
// the config.toml a run folder keeps. The keys are the flags of `attograd train` (the rows of
// train/config/run_config.h): `layers = 4`, `min-lr = 1e-4`, `data = "input.txt"`.
//
// TOML through Debian's libtomlplusplus-dev, header-only inside config_file.cpp, so neither
// the library's users nor its link line ever see it.
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include "train/config/run_config.h"

namespace ag::train {

// The largest configuration file read (base/input_file.h refuses larger ones, and FIFOs,
// devices and directories).
constexpr int64_t kMaxConfigBytes = int64_t(1) << 20;

// Sets the fields FILE names on top of cfg and returns their flags. Throws
// std::runtime_error naming the file (and the line) for a syntax error, an unknown key, a
// value of the wrong type or out of range, a nested table, or nesting (dotted keys, tables,
// arrays) deeper than 64 levels, which is refused before toml++ parses it.
std::set<std::string> read_config_toml(const std::string& path, TrainConfig& cfg);
// The same, from text; `source` names it in errors.
std::set<std::string> parse_config_toml(const std::string& text, const std::string& source, TrainConfig& cfg);

// Every field, each under its help text as a comment, in the table's order; reads back
// exactly (doubles in the shortest form that does). For an --init-from run the model's fields
// but dropout are comments: the model is the checkpoint's, and --config refuses them beside
// init-from, so the file is accepted back as it is.
std::string config_to_toml(const TrainConfig& cfg);
// Writes config_to_toml(cfg) to path atomically (base/atomic_file.h: never through a
// symbolic link, every write checked); throws std::runtime_error naming it when it cannot.
void write_config_toml(const std::string& path, const TrainConfig& cfg);

}  // namespace ag::train
