#include "autograd/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace ag {

namespace {

std::string errno_text(int err) { return std::system_category().message(err); }

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

  fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
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

}  // namespace ag
