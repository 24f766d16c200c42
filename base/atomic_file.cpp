#include "base/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace ag {

namespace {

std::string file_size_limit_text() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return "unknown";
  return std::to_string(static_cast<unsigned long long>(rl.rlim_cur)) + " bytes";
}

// strerror, and for EFBIG (a write past `ulimit -f`; SIGXFSZ is ignored so that the write
// fails instead of killing the process) what limit that is.
std::string errno_text(int err) {
  std::string s = std::system_category().message(err);
  if (err == EFBIG) s += " (the file-size limit, ulimit -f, is " + file_size_limit_text() + ")";
  return s;
}

// Writes all of data to fd, retrying short writes and EINTR. Returns 0 or an errno value.
int write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

std::string temporary_path(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

void write_file_atomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = temporary_path(path);
  int fd = -1;
  bool created = false;
  // Every failure before the rename: close, remove the temporary file, name the step.
  auto abort_with = [&](const std::string& step, int err) {
    if (fd >= 0) ::close(fd);
    if (created) ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": cannot save: " + step + ": " + errno_text(err));
  };

  // A new file (O_EXCL), never through a symbolic link (O_NOFOLLOW): a name planted in a shared
  // folder cannot redirect the write. A file of this name left by an earlier process with our
  // pid is removed (unlink removes a link itself, not what it points to) and the create retried.
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  fd = ::open(tmp.c_str(), flags, 0666);
  if (fd < 0 && errno == EEXIST && ::unlink(tmp.c_str()) == 0) fd = ::open(tmp.c_str(), flags, 0666);
  if (fd < 0) abort_with("cannot create temporary file '" + tmp + "'", errno);
  created = true;
  if (int err = write_all(fd, bytes.data(), bytes.size())) abort_with("write to '" + tmp + "' failed", err);
  if (::fsync(fd) != 0) abort_with("fsync of '" + tmp + "' failed", errno);
  const int close_result = ::close(fd);  // close can report a deferred write error (NFS)
  fd = -1;
  if (close_result != 0) abort_with("close of '" + tmp + "' failed", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) abort_with("rename of '" + tmp + "' over the target failed", errno);

  // Make the rename itself durable. The new file is complete at this point, so a failure
  // here is reported but nothing is removed.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    throw std::runtime_error(path + ": saved, but cannot open its folder to fsync it: " + errno_text(errno));
  const int sync_result = ::fsync(dfd);
  const int sync_errno = errno;
  ::close(dfd);
  // Some file systems do not support fsync on a folder (EINVAL); nothing more can be done there.
  if (sync_result != 0 && sync_errno != EINVAL)
    throw std::runtime_error(path + ": saved, but fsync of its folder failed: " + errno_text(sync_errno));
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t at = name.rfind(".tmp.");
    if (at == std::string::npos || at == 0) continue;
    const std::string digits = name.substr(at + 5);
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::strtol(digits.c_str(), nullptr, 10);
    // kill(pid, 0) fails with ESRCH when no such process exists; EPERM means it runs as another user.
    if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    if (it->is_regular_file(rm) && fs::remove(it->path(), rm)) removed.push_back(it->path().string());
  }
  return removed;
}

std::unique_ptr<AppendFile> AppendFile::create_new(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0 && errno == EEXIST) return nullptr;
  if (fd < 0) throw std::runtime_error(path + ": cannot create the file: " + errno_text(errno));
  return std::unique_ptr<AppendFile>(new AppendFile(fd, path));
}

std::unique_ptr<AppendFile> AppendFile::open_append(const std::string& path) {
  // O_NONBLOCK: a FIFO planted under this name must not block the open (it is refused below).
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0666);
  if (fd < 0)
    throw std::runtime_error(path + ": cannot open the file for writing: " +
                             (errno == ELOOP ? std::string("it is a symbolic link, which attograd never writes through")
                                             : errno_text(errno)));
  struct ::stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path + ": cannot open the file for writing: not a regular file");
  }
  return std::unique_ptr<AppendFile>(new AppendFile(fd, path));
}

AppendFile::~AppendFile() { ::close(fd_); }

void AppendFile::write(std::string_view bytes) {
  if (int err = write_all(fd_, bytes.data(), bytes.size()))
    throw std::runtime_error(path_ + ": write failed: " + errno_text(err));
}

}  // namespace ag
