#include "train/run_folder/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "base/atomic_file.h"
#include "train/config/config_error.h"

namespace ag::train {

namespace fs = std::filesystem;

namespace {
constexpr const char* kLockName = "attograd.lock";
constexpr const char* kStateName = "train_state.safetensors";

// The pid the holder wrote into the lock file ("" when unreadable).
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.find_first_not_of("0123456789") == std::string::npos ? s : "";
}

// Files a run may write besides run_files(): they belong to it (removed with it) but do not
// make a folder a run.
bool run_extra_file(const std::string& name) {
  return name == "config.toml" || name == "run_id" || name == "trace.json" || name == "profile_table.txt" ||
         (name.rfind("grad_report_iter", 0) == 0 && name.ends_with(".txt"));
}

// The files attograd itself reads or writes directly in a run folder (tb/ is a folder).
bool written_by_attograd(const std::string& name) {
  for (const auto& f : RunDir::run_files())
    if (name == f) return true;
  return name == kLockName || name == "tb" || run_extra_file(name) || name.find(".tmp.") != std::string::npos;
}

const char* kind_of(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// Every file of the folder that attograd reads or writes must be a regular file (tb a folder),
// and none a symbolic link: attograd would otherwise read a FIFO forever, or write (through
// the link) to a file outside the folder.
void refuse_foreign_files(const std::string& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!written_by_attograd(name)) continue;
    struct ::stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;  // gone meanwhile
    const bool ok = name == "tb" ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
    if (!ok)
      throw std::runtime_error(it->path().string() + ": is " + kind_of(st.st_mode) +
                               "; the files of a run folder must be regular files that attograd wrote (it never "
                               "follows a link there, which could make it write to a file outside the folder). "
                               "Remove it, or give another folder");
  }
}

bool has_checkpoint(const fs::path& dir) {
  std::error_code ec;
  for (const char* f : {kStateName, "model.safetensors", "model.best.safetensors"})
    if (fs::exists(dir / f, ec)) return true;
  return false;
}
}  // namespace

const std::vector<std::string>& RunDir::run_files() {
  static const std::vector<std::string> files = {kStateName, "model.safetensors", "model.best.safetensors",
                                                 "metrics.jsonl"};
  return files;
}

void RunDir::require_checkpoint(const std::string& dir) {
  const fs::path d(dir), state = d / kStateName;
  std::error_code ec;
  if (fs::exists(state, ec)) return;
  std::string why = "; --resume needs a run folder written by attograd train";
  if (fs::exists(d / "metrics.jsonl", ec))
    why = ": the run in " + dir + " stopped before its first checkpoint, so there is nothing to resume; start it again " +
          (fs::exists(d / "config.toml", ec) ? "with attograd train --config " + (d / "config.toml").string()
                                             : std::string("with the same command")) +
          " (a new run replaces what it left)";
  throw std::runtime_error(state.string() + ": not found" + why);
}

RunDir::RunDir(const std::string& dir, Mode mode) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create the run folder: " + ec.message());
  refuse_foreign_files(dir);
  const std::string lock_path = (fs::path(dir) / kLockName).string();
  // O_NOFOLLOW: a link planted since the check above is refused too (ELOOP), never truncated.
  fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd_ < 0)
    throw std::runtime_error(lock_path + ": cannot open the run folder's lock file: " +
                             (errno == ELOOP ? std::string("it is a symbolic link") : std::strerror(errno)));
  struct ::stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error(lock_path + ": the run folder's lock file is not a regular file; remove it");
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string pid = holder_pid(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw std::runtime_error(dir + ": the run folder is in use by another attograd train (" +
                               (pid.empty() ? std::string("pid unknown") : "pid " + pid) +
                               "); wait for it to finish, or give another --out");
    throw std::runtime_error(lock_path + ": cannot lock the run folder: " + std::strerror(err));
  }
  // Ours now: record who holds it, for the message a second run prints.
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    // Not fatal: the lock holds without the pid; the message then says "pid unknown".
  }

  removed_ = remove_stale_temporaries(dir);

  if (mode == Mode::Resume) return;
  std::vector<std::string> present;
  for (const auto& f : run_files())
    if (fs::exists(fs::path(dir) / f, ec)) present.push_back(f);
  if (present.empty()) return;
  // A run killed after it created metrics.jsonl but before its first checkpoint left nothing
  // to resume: starting over is what both a new run and --resume would have to do.
  const bool stale = !has_checkpoint(dir);
  if (mode == Mode::Fresh && !stale) {
    std::string list;
    for (const auto& f : present) list += (list.empty() ? "" : ", ") + f;
    ::close(fd_);
    fd_ = -1;
    throw ConfigError(dir + " already holds a run (" + list + "); continue it with --resume " + dir +
                      ", or replace it with --overwrite");
  }
  // Overwrite (or a stale run): the old run's files go first, so nothing of it (a best model,
  // gradient reports, its configuration, a profile) can be mistaken for the new run's.
  std::vector<fs::path> old;
  for (const auto& f : present) old.push_back(fs::path(dir) / f);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (run_extra_file(it->path().filename().string())) old.push_back(it->path());
  for (const auto& p : old) {
    std::error_code rm;
    if (fs::remove(p, rm) && stale && mode == Mode::Fresh) removed_.push_back(p.string());
  }
}

RunDir::~RunDir() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace ag::train
