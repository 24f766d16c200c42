#include "base/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace ag {

namespace {

const char* kind_of(mode_t m) {
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string errno_text(int err) { return std::system_category().message(err); }

// Closes the descriptor on every path out of read_input_file.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string read_input_file(const InputFile& file) {
  const std::string& label = file.label.empty() ? file.path : file.label;
  auto fail = [&](const std::string& problem) -> void { throw std::runtime_error(label + ": " + problem); };
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. It has
  // no effect on reading a regular file, the only kind read below.
  Fd f{::open(file.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) {
    const int err = errno;
    if (err == ENOENT)
      fail("cannot open file: not found" + (file.not_found_hint.empty() ? "" : "; " + file.not_found_hint));
    fail("cannot open file: " + errno_text(err) + "; make it readable or pass another path");
  }
  // fstat on the descriptor opened: the kind and size checked are those of the file read.
  struct ::stat st {};
  if (::fstat(f.fd, &st) != 0) fail("cannot stat file: " + errno_text(errno));
  if (S_ISDIR(st.st_mode)) fail("is a directory, not a regular file; pass the path of a file");
  if (!S_ISREG(st.st_mode))
    fail(std::string("is ") + kind_of(st.st_mode) + ", not a regular file; only a regular file is read (this one might never end)");
  const int64_t max_bytes = std::max<int64_t>(file.max_bytes, 0);
  auto too_large = [&](const std::string& size) {
    fail("is too large: " + size + " bytes, more than the " + std::to_string(max_bytes) + " allowed (" +
         file.limit_reason + ")");
  };
  if (st.st_size > max_bytes) too_large(std::to_string(st.st_size));

  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  for (;;) {
    if (got == bytes.size()) {
      // The file may have grown since fstat: keep reading, up to the cap (one byte past it
      // tells that it is larger).
      if (static_cast<int64_t>(got) > max_bytes) too_large("more than " + std::to_string(max_bytes));
      bytes.resize(static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(got) + (1 << 16), max_bytes + 1)));
    }
    const ssize_t n = ::read(f.fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("read error: " + errno_text(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (static_cast<int64_t>(got) > max_bytes) too_large("more than " + std::to_string(max_bytes));
  bytes.resize(got);
  return bytes;
}

}  // namespace ag
