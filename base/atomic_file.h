// How attograd writes files. Two ways, both never through a final symbolic link and with every
// write checked (a full disk, a file-size limit or an I/O error throws, naming the file):
//
// Replacing a file so that a crash, a kill or a full disk at any moment leaves either the old
// file or the new one, never a mix: write "<path>.tmp.<pid>" in the same folder (created with
// O_EXCL | O_NOFOLLOW), fsync it, rename it over path (the rename replaces a link itself, never
// its target), fsync the folder. Checkpoints, config.toml, gradient reports, PNGs are written
// this way, and metrics.jsonl when a run starts or resumes.
//
// Appending to a file (AppendFile): TensorBoard event files, a log. Opened with O_NOFOLLOW,
// created with O_EXCL when it must be new.
//
// A process killed (SIGKILL) between the create and the rename leaves its temporary file
// behind; remove_stale_temporaries() removes those of processes that no longer run.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ag {

// Writes bytes to path as described above. On failure the temporary file is removed, path is
// left as it was, and std::runtime_error names the path and the failed step.
void write_file_atomically(const std::string& path, std::string_view bytes);

// "<path>.tmp.<pid>" for this process: the temporary file write_file_atomically uses.
std::string temporary_path(const std::string& path);

// Removes every "<name>.tmp.<pid>" directly in dir whose pid is not a running process, and
// returns the removed paths. Temporaries of live processes (another run saving right now)
// are left alone. Errors (an unreadable folder) are ignored: this is housekeeping.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

// A file written piece by piece. Every write goes to the OS at once (no buffer to lose) and is
// checked: a short write is continued, a failure throws std::runtime_error naming the file and
// the reason (with the limit for a file past `ulimit -f`).
class AppendFile {
 public:
  // A new file: nullptr when the name is taken (by anything, a link included), so the caller
  // can pick another name; throws for any other failure.
  static std::unique_ptr<AppendFile> create_new(const std::string& path);
  // Appends to path, creating it if missing; throws when it is a symbolic link or not a
  // regular file, or cannot be opened.
  static std::unique_ptr<AppendFile> open_append(const std::string& path);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void write(std::string_view bytes);
  const std::string& path() const { return path_; }

 private:
  AppendFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace ag
