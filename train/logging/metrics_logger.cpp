#include "train/logging/metrics_logger.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/atomic_file.h"

namespace ag::train {

using nlohmann::json;

MetricsLogger::MetricsLogger(std::string path) : path_(std::move(path)) {}

MetricsLogger::~MetricsLogger() = default;

void MetricsLogger::on_start(const RunStart& e) {
  // A new run replaces the file (atomically: a link planted under its name is replaced, never
  // written through); a resumed one keeps the lines of the steps it has made.
  if (e.resumed) truncate_metrics(path_, e.start_iter);
  else write_file_atomically(path_, "");
  out_ = AppendFile::open_append(path_);  // never through a symbolic link; every write checked
}

void MetricsLogger::write_line(const std::string& text) {
  try {
    out_->write(text + "\n");  // the line and its newline in one write
  } catch (const std::runtime_error& e) {
    const std::string dir = std::filesystem::path(path_).parent_path().string();
    throw std::runtime_error(std::string(e.what()) + "; stopped so that it has no gap. " +
                             "Continue from the last checkpoint with: attograd train --resume " +
                             (dir.empty() ? std::string(".") : dir));
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
