// The run folder of `attograd train`, opened for one training process:
//   * an exclusive flock on DIR/attograd.lock for as long as the run lives, so that a second
//     `attograd train` on the same folder (new or --resume) refuses, naming the holder's pid,
//     instead of interleaving metrics and overwriting the other's models;
//   * every file attograd reads or writes in it must be a regular file (tb/ a folder), never a
//     symbolic link: a folder made by someone else (shared, or pre-made under /tmp) could
//     otherwise make attograd write through a link to any file the user can write. Such a
//     folder is refused, naming the file;
//   * a new run refuses a folder that already holds one (its files would be replaced in
//     silence) unless asked to overwrite it; a run killed before its first checkpoint (a
//     metrics.jsonl, no checkpoint) is no run to keep: its files are removed and reported;
//   * temporary files "*.tmp.<pid>" left by a killed process (base/atomic_file.h) are removed.
// The lock is released by the kernel when the process ends, however it ends.
#pragma once
#include <string>
#include <vector>

namespace ag::train {

class RunDir {
 public:
  enum class Mode {
    Fresh,      // a new run: the folder must not hold one (ConfigError otherwise)
    Overwrite,  // a new run replacing the one in the folder: its files are removed first
    Resume,     // continuing the run in the folder
  };
  // Creates dir if needed and takes the lock. Throws std::runtime_error naming the folder and
  // the pid holding the lock, or naming a file that is a symbolic link or not a regular file;
  // ConfigError (train/config/config_error.h) for Fresh on an existing run.
  RunDir(const std::string& dir, Mode mode);
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  // The files removed when the folder was opened: stale temporaries, and the files of a run
  // killed before its first checkpoint.
  const std::vector<std::string>& removed_temporaries() const { return removed_; }

  // The files that make a folder a run (any one of them is enough).
  static const std::vector<std::string>& run_files();

  // Throws std::runtime_error unless dir holds a checkpoint to resume from, saying why not: no
  // such folder, not a run folder, or a run that stopped before its first checkpoint (and how
  // to start it again).
  static void require_checkpoint(const std::string& dir);

 private:
  int fd_ = -1;
  std::vector<std::string> removed_;
};

}  // namespace ag::train
