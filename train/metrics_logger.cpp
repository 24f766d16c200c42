#include "train/metrics_logger.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "autograd/atomic_file.h"

namespace ag::train {

using nlohmann::json;

MetricsLogger::MetricsLogger(std::string path) : path_(std::move(path)) {}

MetricsLogger::~MetricsLogger() {
  if (fd_ >= 0) ::close(fd_);
}

void MetricsLogger::on_start(const RunStart& e) {
  if (e.resumed) truncate_metrics(path_, e.start_iter);
  // O_NOFOLLOW: a symlink planted in the run folder is refused, not written through.
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | (e.resumed ? 0 : O_TRUNC);
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) throw std::runtime_error(path_ + ": cannot open for writing (" + std::strerror(errno) + ")");
}

void MetricsLogger::write_line(const std::string& text) {
  const std::string line = text + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "nothing written";
      const std::string dir = std::filesystem::path(path_).parent_path().string();
      throw std::runtime_error(path_ + ": cannot write (" + why + "); stopped so that it has no gap. " +
                               "Continue from the last checkpoint with: attograd train --resume " +
                               (dir.empty() ? std::string(".") : dir));
    }
    done += static_cast<size_t>(n);
  }
}

void MetricsLogger::on_step(const StepEnd& e) {
  if (!e.logged) return;
  last_ = e;
  write_line(json{{"iter", e.iter},
                  {"train_loss", e.loss},
                  {"val_loss", nullptr},
                  {"lr", e.lr},
                  {"grad_norm", e.grad_norm},
                  {"tokens_per_s", e.tokens_per_s},
                  {"ms_per_step", e.ms_per_step},
                  {"mfu", e.mfu},
                  {"elapsed_s", e.elapsed_s}}
                 .dump());
}

void MetricsLogger::on_eval(const EvalEnd& e) {
  write_line(json{{"iter", e.iter},
                  {"train_loss", e.train_loss},
                  {"val_loss", e.val_loss},
                  {"lr", e.lr},
                  {"grad_norm", nullptr},
                  {"tokens_per_s", last_.tokens_per_s},
                  {"ms_per_step", last_.ms_per_step},
                  {"mfu", last_.mfu},
                  {"elapsed_s", e.elapsed_s}}
                 .dump());
}

void truncate_metrics(const std::string& path, int64_t last_iter) {
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      if (json::parse(line).at("iter").get<int64_t>() <= last_iter) kept += line + "\n";
    } catch (const std::exception&) {
      // a torn last line from a crash: drop it
    }
  }
  in.close();
  write_file_atomically(path, kept);
}

}  // namespace ag::train
