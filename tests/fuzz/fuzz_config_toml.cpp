// libFuzzer target for the run-configuration reader (train/config/config_file.h, toml++ inside): any
// text must either set fields or be refused naming the source: std::runtime_error for text
// that is not a configuration, train::ConfigError (a usage error, exit status 2) for a value out
// of range such as `eval-iters = 0`. A crash, a stack overflow (deep dotted keys, tables, arrays), a sanitizer report or any other
// exception is a bug. Built by `make fuzz` (clang, -fsanitize=fuzzer,address) beside
// fuzz_safetensors; seeds in tests/fuzz/corpus_toml, crashes kept in tests/fuzz/regressions_toml
// (tests/hostile/test_fuzz_regressions.cpp replays both on every test run).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "train/config/config_error.h"
#include "train/config/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ag::train::TrainConfig cfg;
  try {
    ag::train::parse_config_toml(std::string(reinterpret_cast<const char*>(data), size), "fuzz.toml", cfg);
  } catch (const ag::train::ConfigError& e) {
    if (std::string(e.what()).rfind("fuzz.toml", 0) != 0) __builtin_trap();  // every refusal names the file
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind("fuzz.toml", 0) != 0) __builtin_trap();
  }
  return 0;
}
