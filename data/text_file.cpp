#include "data/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ag::data {

namespace {

[[noreturn]] void fail(const std::string& label, const std::string& problem) {
  throw std::runtime_error(label + ": " + problem);
}

const char* kind_of(mode_t m) {
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// Closes the descriptor on every path out of read_text_file.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_text_file(const std::string& path, const std::string& label, const std::string& not_found_hint,
                           int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. It has
  // no effect on reading a regular file, the only kind read below.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) {
    const int err = errno;
    if (err == ENOENT) fail(label, "file not found" + (not_found_hint.empty() ? "" : "; " + not_found_hint));
    fail(label, std::string("cannot open: ") + std::strerror(err) + "; make the file readable or pass another path");
  }
  struct ::stat st {};
  if (::fstat(f.fd, &st) != 0) fail(label, std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(label, "is a directory; pass the path of a UTF-8 text file instead");
  if (!S_ISREG(st.st_mode))
    fail(label, std::string("is ") + kind_of(st.st_mode) +
                    ", not a regular file; only a text file of known size is read (it might never end)");
  const auto too_large = [&](const std::string& size) {
    fail(label, "is too large: " + size + " bytes, more than the " + std::to_string(max_bytes) +
                    " a text file may have here; use a smaller file");
  };
  if (st.st_size > max_bytes) too_large(std::to_string(st.st_size));

  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  for (;;) {
    if (got == bytes.size()) {
      // The file may have grown since fstat: keep reading, up to the limit.
      if (static_cast<int64_t>(got) >= max_bytes + 1) too_large("more than " + std::to_string(max_bytes));
      bytes.resize(std::min<size_t>(got + (1 << 16), static_cast<size_t>(max_bytes) + 1));
    }
    const ssize_t n = ::read(f.fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      fail(label, std::string("read error: ") + std::strerror(errno) + "; pass the path of a readable text file");
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (static_cast<int64_t>(got) > max_bytes) too_large("more than " + std::to_string(max_bytes));
  bytes.resize(got);
  return bytes;
}

}  // namespace ag::data
