// Every input the safetensors fuzzer ever crashed on (tests/fuzz/regressions/) and the seed
// corpus (tests/fuzz/corpus/) go through the reader here on every test run: each must be read
// or refused with a std::runtime_error naming the file, never crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "autograd/safetensors.h"

namespace fs = std::filesystem;

TEST(SafeTensorsFuzzRegressions, EveryStoredInputIsReadOrRefusedCleanly) {
  int files = 0;
  for (const char* sub : {"tests/fuzz/regressions", "tests/fuzz/corpus"}) {
    const fs::path dir = fs::path(ATTOGRAD_SOURCE_DIR) / sub;
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_regular_file() || e.path().filename() == "README.md") continue;
      ++files;
      std::ifstream in(e.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), {});
      try {
        const auto f = ag::SafeTensorsFile::parse(bytes, e.path().filename().string());
        for (const auto& n : f.names()) {
          const auto& dt = f.info(n).dtype;
          if (dt == "F32" || dt == "F64" || dt == "I64" || dt == "BOOL") (void)f.get(n);
        }
      } catch (const std::runtime_error& err) {
        EXPECT_EQ(std::string(err.what()).rfind(e.path().filename().string(), 0), 0u) << err.what();
      }
    }
  }
  EXPECT_GE(files, 5);
}
