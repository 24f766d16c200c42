// docs/architecture.md, "A new logger": a RunLogger that writes loss.csv (iter, train loss,
// gradient norm) at every logged step. It overrides the events it needs (train/logging/run_logger.h)
// and is attached through RunHooks; the run gives it to rank 0 only. A new metric would be a
// field of StepEnd and one line here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/test_util.h"
#include "train/trainer.h"

namespace ag::example {

class CsvLossLogger : public train::RunLogger {
 public:
  explicit CsvLossLogger(std::string path) : path_(std::move(path)) {}
  void on_start(const train::RunStart& e) override {
    out_.open(path_, e.resumed ? std::ios::app : std::ios::trunc);
    if (!e.resumed) out_ << "iter,loss,grad_norm\n";
  }
  void on_step(const train::StepEnd& e) override {
    if (!e.logged) return;
    out_ << e.iter << "," << e.loss << "," << e.grad_norm << "\n";
    if (!out_.flush()) throw std::runtime_error(path_ + ": cannot write");  // a logger that fails stops the run
  }

 private:
  std::string path_;
  std::ofstream out_;
};

TEST(ArchitectureExample, ANewLoggerSeesEveryLoggedStep) {
  namespace fs = std::filesystem;
  const fs::path d = testing_util::temp_dir("example_logger");
  std::string text;
  for (int i = 0; i < 100; ++i) text += "hello world " + std::to_string(i % 3) + "\n";
  std::ofstream(d / "corpus.txt") << text;
  train::TrainConfig c;
  c.data_path = (d / "corpus.txt").string();
  c.out_dir = (d / "run").string();
  c.model = models::GPTConfig{0, 1, 1, 8, 8, 0.0};
  c.batch_size = 2;
  c.iters = 6;
  c.eval_every = 3;
  c.eval_iters = 1;
  c.log_every = 2;
  c.sample_tokens = 0;
  train::RunHooks hooks;
  hooks.loggers.push_back(std::make_shared<CsvLossLogger>((d / "loss.csv").string()));
  std::ostringstream log;
  train::train_lm(c, log, hooks);
  const auto lines = testing_util::read_lines(d / "loss.csv");
  ASSERT_EQ(lines.size(), 4u);  // the header, iters 2, 4 and 6
  // The same steps and values as metrics.jsonl's step lines (the CSV has 6 digits).
  size_t row = 1;
  for (const auto& l : testing_util::read_lines(fs::path(c.out_dir) / "metrics.jsonl")) {
    const auto j = nlohmann::json::parse(l);
    if (!j["val_loss"].is_null()) continue;
    ASSERT_LT(row, lines.size());
    std::istringstream csv(lines[row++]);
    std::string iter, loss, norm;
    std::getline(csv, iter, ',');
    std::getline(csv, loss, ',');
    std::getline(csv, norm, ',');
    EXPECT_EQ(std::stoll(iter), j["iter"].get<int64_t>());
    EXPECT_NEAR(std::stod(loss), j["train_loss"].get<double>(), 1e-5);
    EXPECT_NEAR(std::stod(norm), j["grad_norm"].get<double>(), 1e-5 * j["grad_norm"].get<double>());
  }
  EXPECT_EQ(row, lines.size());
}

}  // namespace ag::example
