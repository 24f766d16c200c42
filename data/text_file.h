// Reading a whole text file given on the command line (a training corpus, eval's --text-file,
// a prompt file) through base/input_file.h: only a regular file is read (not /dev/zero, a
// FIFO, a socket or a directory), and never more than kMaxTextFileBytes.
#pragma once
#include <cstdint>
#include <string>

namespace ag::data {

// 256 MiB: far above any corpus a character model on a CPU trains on (tiny shakespeare is
// 1.1 MB), and small enough that its decoded ids (about 20 bytes per byte) fit in memory.
constexpr int64_t kMaxTextFileBytes = int64_t(256) << 20;

// The file's bytes. Every problem throws std::runtime_error("<label>: <problem>; <what to do>"):
// not found (followed by not_found_hint when given), a directory, not a regular file (named:
// character device, FIFO...), unreadable, larger than max_bytes, or growing past it while read.
std::string read_text_file(const std::string& path, const std::string& label, const std::string& not_found_hint = "",
                           int64_t max_bytes = kMaxTextFileBytes);

}  // namespace ag::data
