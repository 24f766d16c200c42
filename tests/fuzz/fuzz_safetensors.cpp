// libFuzzer target for the safetensors reader: any byte string must either parse into tensors
// that can all be read, or be refused with std::runtime_error. A crash, a sanitizer report or
// any other exception is a bug. Built by `make fuzz` (clang, -fsanitize=fuzzer,address).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "autograd/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto f = ag::SafeTensorsFile::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz.safetensors");
    for (const auto& name : f.names()) {
      const auto& info = f.info(name);
      (void)f.bytes(name);
      if (info.dtype == "F32" || info.dtype == "F64" || info.dtype == "I64" || info.dtype == "BOOL") {
        const ag::Tensor t = f.get(name);
        if (t.numel() != static_cast<int64_t>((info.end - info.begin) / ag::dtype_size(t.dtype()))) __builtin_trap();
      }
    }
  } catch (const std::runtime_error&) {
    // refused with a message: the expected outcome for malformed input
  }
  return 0;
}
