// The run folder of `attograd train`, opened for one training process:
//   * an exclusive flock on DIR/attograd.lock for as long as the run lives, so that a second
//     `attograd train` on the same folder (new or --resume) refuses, naming the holder's pid,
//     instead of interleaving metrics and overwriting the other's models;
//   * a new run refuses a folder that already holds one (its files would be replaced in
//     silence) unless asked to overwrite it;
//   * temporary files "*.tmp.<pid>" left by a killed process (autograd/atomic_file.h) are removed.
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
  // the pid holding the lock, or ConfigError (train/config_error.h) for Fresh on an existing run.
  RunDir(const std::string& dir, Mode mode);
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  // The stale temporary files removed when the folder was opened.
  const std::vector<std::string>& removed_temporaries() const { return removed_; }

  // The files that make a folder a run (any one of them is enough).
  static const std::vector<std::string>& run_files();

 private:
  int fd_ = -1;
  std::vector<std::string> removed_;
};

}  // namespace ag::train
