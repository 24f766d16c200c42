#include "viz/graphviz.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "base/atomic_file.h"

extern char** environ;

namespace ag::viz {

std::string find_dot() {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/dot";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

void render_dot(const std::string& dot, const std::string& dot_file, const std::string& out_file, const std::string& format) {
  const std::string type = "-T" + format;
  // dot writes a new temporary, renamed over out_file: never through a symbolic link there.
  const std::string tmp = temporary_path(out_file);
  ::unlink(tmp.c_str());
  std::vector<std::string> args = {dot, type, dot_file, "-o", tmp};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, dot.c_str(), nullptr, nullptr, argv.data(), environ);
  if (err != 0) throw std::runtime_error(dot + ": cannot run: " + std::strerror(err));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(dot + ": waitpid failed: " + std::strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(out_file + ": Graphviz's dot failed to render " + dot_file + " (status " +
                             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  }
  if (::rename(tmp.c_str(), out_file.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(out_file + ": cannot save: rename of '" + tmp + "' failed: " + std::strerror(e));
  }
}

}  // namespace ag::viz
