#include "data/text_file.h"

#include "base/input_file.h"

namespace ag::data {

std::string read_text_file(const std::string& path, const std::string& label, const std::string& not_found_hint,
                           int64_t max_bytes) {
  return read_input_file({path, label, max_bytes,
                          max_bytes == kMaxTextFileBytes ? "a text file may have at most 256 MiB" : "the limit for this text",
                          not_found_hint});
}

}  // namespace ag::data
