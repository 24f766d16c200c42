// Every input a fuzzer ever crashed on and every seed go through their reader here on every
// test run: each must be read or refused with a std::runtime_error (or, for a configuration
// value out of range, a train::ConfigError) naming the file, never crash. The safetensors reader: tests/fuzz/regressions/ and tests/fuzz/corpus/; the
// run-configuration (TOML) reader: tests/fuzz/regressions_toml/ and tests/fuzz/corpus_toml/ (a
// deep dotted key once overflowed the stack; `eval-iters = +0` once escaped the fuzz target as a
// ConfigError it did not expect).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "autograd/safetensors.h"
#include "train/config/config_error.h"
#include "train/config/config_file.h"

namespace fs = std::filesystem;

namespace {
// Calls read(bytes, name) on every stored input of the folders; a refusal (std::runtime_error or
// train::ConfigError) must start with the name; any other exception fails the test. Returns how many inputs there were.
int replay(std::initializer_list<const char*> folders, const std::function<void(const std::string&, const std::string&)>& read) {
  int files = 0;
  for (const char* sub : folders) {
    const fs::path dir = fs::path(ATTOGRAD_SOURCE_DIR) / sub;
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_regular_file() || e.path().filename() == "README.md") continue;
      ++files;
      std::ifstream in(e.path(), std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), {});
      const std::string name = e.path().filename().string();
      try {
        read(bytes, name);
      } catch (const ag::train::ConfigError& err) {
        EXPECT_EQ(std::string(err.what()).rfind(name, 0), 0u) << err.what();
      } catch (const std::runtime_error& err) {
        EXPECT_EQ(std::string(err.what()).rfind(name, 0), 0u) << err.what();
      }
    }
  }
  return files;
}
}  // namespace

TEST(SafeTensorsFuzzRegressions, EveryStoredInputIsReadOrRefusedCleanly) {
  const int files = replay({"tests/fuzz/regressions", "tests/fuzz/corpus"}, [](const std::string& bytes, const std::string& name) {
    const auto f = ag::SafeTensorsFile::parse(bytes, name);
    for (const auto& n : f.names()) {
      const auto& dt = f.info(n).dtype;
      if (dt == "F32" || dt == "F64" || dt == "I64" || dt == "BOOL") (void)f.get(n);
    }
  });
  EXPECT_GE(files, 5);
}

TEST(ConfigTomlFuzzRegressions, EveryStoredInputIsReadOrRefusedCleanly) {
  const int files = replay({"tests/fuzz/regressions_toml", "tests/fuzz/corpus_toml"}, [](const std::string& text, const std::string& name) {
    ag::train::TrainConfig cfg;
    ag::train::parse_config_toml(text, name, cfg);
  });
  EXPECT_GE(files, 5);
}
