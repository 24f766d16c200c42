// Reading a file named on the command line or found in a run folder without trusting it to be
// a file, or to end: the one function every input of attograd goes through (corpora, prompts,
// configuration files, checkpoints and train states, attention cases, metrics, fonts).
//
// The path is followed (a symbolic link to a file is fine), then only a regular file is read:
// a directory, a FIFO (which would block forever waiting for a writer), a character device
// (/dev/zero never ends), a socket or a block device are refused by name; so is a file larger
// than the caller's cap, checked before reading and again while reading (it may grow).
#pragma once
#include <cstdint>
#include <string>

namespace ag {

struct InputFile {
  std::string path;
  std::string label;           // how errors name the file; the path itself when empty
  int64_t max_bytes = 0;       // the cap: larger files are refused
  std::string limit_reason;    // why the cap, for the message ("a text file may have at most 256 MiB")
  std::string not_found_hint;  // appended to "not found" when given ("is it a run folder?")
};

// The file's bytes. Every problem throws std::runtime_error("<label>: <problem>[; <what to do>]"):
//   "cannot open file: not found", "cannot open file: <strerror>", "is a directory, not a
//   regular file", "is a FIFO (named pipe), not a regular file; ...", "is too large: N bytes,
//   more than the M ...", "read error: <strerror>".
std::string read_input_file(const InputFile& file);

}  // namespace ag
