#include "train/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "autograd/atomic_file.h"
#include "train/config_error.h"

namespace ag::train {

namespace fs = std::filesystem;

namespace {
constexpr const char* kLockName = "attograd.lock";

// The pid the holder wrote into the lock file ("" when unreadable).
std::string holder_pid(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.find_first_not_of("0123456789") == std::string::npos ? s : "";
}
}  // namespace

const std::vector<std::string>& RunDir::run_files() {
  static const std::vector<std::string> files = {"train_state.safetensors", "model.safetensors",
                                                 "model.best.safetensors", "metrics.jsonl"};
  return files;
}

RunDir::RunDir(const std::string& dir, Mode mode) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create the run folder: " + ec.message());
  const std::string lock_path = (fs::path(dir) / kLockName).string();
  fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw std::runtime_error(lock_path + ": cannot open the run folder's lock file: " + std::strerror(errno));
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
  if (mode == Mode::Fresh) {
    std::string list;
    for (const auto& f : present) list += (list.empty() ? "" : ", ") + f;
    ::close(fd_);
    fd_ = -1;
    throw ConfigError(dir + " already holds a run (" + list + "); continue it with --resume " + dir +
                      ", or replace it with --overwrite");
  }
  // Overwrite: the old run's files go first, so nothing of it (a best model, gradient reports)
  // can be mistaken for the new run's.
  for (const auto& f : present) fs::remove(fs::path(dir) / f, ec);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("grad_report_iter", 0) == 0 && name.ends_with(".txt")) {
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
}

RunDir::~RunDir() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace ag::train
