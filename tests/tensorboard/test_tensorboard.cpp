// The TensorBoard event writer: CRC-32C and TFRecord framing against values from TensorBoard's
// own Python implementation, histograms, and event files parsed back with the protobuf classes;
// the training logger on a real (interrupted and resumed) run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tensorboard/event.pb.h"
#include "tensorboard/event_writer.h"
#include "tensorboard/train_logger.h"
#include "tensorboard/tfrecord.h"
#include "tests/test_util.h"
#include "train/trainer.h"

using namespace ag::tensorboard;
using namespace ag::testing_util;
namespace pb = ::attograd::tensorboard;
namespace fs = std::filesystem;

TEST(TfRecord, Crc32cOfTheCheckString) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(crc32c(""), 0u);
  // tensorboard.compat.tensorflow_stub.pywrap_tensorflow.masked_crc32c(b"123456789")
  EXPECT_EQ(masked_crc32c("123456789"), 0xc78ab0e5u);
  EXPECT_EQ(mask_crc(0xE3069283u), 0xc78ab0e5u);
}

TEST(TfRecord, FramesLikeTensorBoard) {
  // The same record built in Python with struct.pack and TensorBoard's masked_crc32c.
  const std::string expected_hex = "0800000000000000ff86240f6174746f6772616436a62d4b";
  const std::string rec = frame_record("attograd");
  std::string hex;
  for (unsigned char c : rec) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", c);
    hex += b;
  }
  EXPECT_EQ(hex, expected_hex);
  EXPECT_EQ(frame_record("").size(), 16u);
}

TEST(TfRecord, ReadsBackAndRejectsDamage) {
  const fs::path dir = temp_dir("tfrecord");
  const fs::path p = dir / "r.tfrecord";
  const std::string binary("a\0b\xff", 4);
  std::ofstream(p, std::ios::binary) << frame_record("first") << frame_record("") << frame_record(binary);
  EXPECT_EQ(read_records(p.string()), (std::vector<std::string>{"first", "", binary}));

  std::string bytes = read_bytes(p);
  const size_t first = frame_record("first").size();
  std::string bad = bytes;
  bad[14] ^= 1;  // a data byte of the first record
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bad;
  EXPECT_NE(error_of([&] { read_records(p.string()); }).find("r.tfrecord: record at byte 0: the CRC of its data"),
            std::string::npos);
  bad = bytes;
  bad[first] ^= 1;  // the length of the second record
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bad;
  EXPECT_NE(error_of([&] { read_records(p.string()); }).find("record at byte " + std::to_string(first) + ": the CRC of its length"),
            std::string::npos);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 2);
  EXPECT_NE(error_of([&] { read_records(p.string()); }).find("cut short"), std::string::npos);
  fs::remove_all(dir);
}

TEST(TensorBoardHistogram, EqualWidthBucketsOverTheFiniteValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Histogram h = make_histogram({1, 2, 3, 4, nan, -inf}, 3);
  EXPECT_EQ(h.min, 1);
  EXPECT_EQ(h.max, 4);
  EXPECT_EQ(h.num, 4);
  EXPECT_EQ(h.sum, 10);
  EXPECT_EQ(h.sum_squares, 30);
  EXPECT_EQ(h.limits, (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(h.counts, (std::vector<double>{2, 1, 1}));  // (.., 2] holds 1 and 2; (2, 3] 3; (3, 4] 4

  const Histogram same = make_histogram({0.5, 0.5}, 10);
  EXPECT_EQ(same.limits, (std::vector<double>{0.5}));
  EXPECT_EQ(same.counts, (std::vector<double>{2}));
  const Histogram none = make_histogram({nan}, 10);
  EXPECT_EQ(none.num, 0);
  EXPECT_EQ(none.counts, (std::vector<double>{0}));
  EXPECT_THROW(make_histogram({1}, 0), std::invalid_argument);

  // Every value lands in a bucket, the counts add up, limits rise to max.
  std::vector<double> v;
  for (int i = 0; i < 1000; ++i) v.push_back(std::sin(i * 0.37) * 0.1);
  const Histogram s = make_histogram(v, 30);
  double total = 0;
  for (double c : s.counts) total += c;
  EXPECT_EQ(total, 1000);
  EXPECT_EQ(s.limits.back(), s.max);
  for (size_t i = 1; i < s.limits.size(); ++i) EXPECT_LT(s.limits[i - 1], s.limits[i]);
}

TEST(TensorBoardEventWriter, WritesEventsThatParseBack) {
  const fs::path dir = temp_dir("tb_writer") / "tb";
  std::string path;
  {
    EventWriter w(dir.string());
    path = w.path();
    // events.out.tfevents.<10-digit unix time>.<hostname>
    const std::string name = fs::path(path).filename().string(), prefix = "events.out.tfevents.";
    ASSERT_GT(name.size(), prefix.size() + 12) << path;
    EXPECT_EQ(name.substr(0, prefix.size()), prefix);
    EXPECT_TRUE(std::all_of(name.begin() + prefix.size(), name.begin() + prefix.size() + 10,
                            [](unsigned char c) { return std::isdigit(c) != 0; })) << path;
    EXPECT_EQ(name[prefix.size() + 10], '.') << path;
    // Readable before anything else is written: the file_version event is flushed at once.
    ASSERT_EQ(read_records(path).size(), 1u);
    w.add_scalar("loss/train", 2.5, 10);
    w.add_scalar("zero", 0.0, 11);
    w.add_histogram("weights/w", make_histogram({1, 2, 3, 4}, 3), 20);
    w.add_image("attention/layer0", "\x89PNG...", 7, 5, 20);
    w.add_text("sample", "To be\nor not", 20);
    w.add_session_start(30);
    w.flush();
    // A second writer in the same second gets a file of its own.
    EventWriter w2(dir.string());
    EXPECT_NE(w2.path(), path);
  }
  const auto records = read_records(path);
  ASSERT_EQ(records.size(), 7u);
  std::vector<pb::Event> ev(records.size());
  for (size_t i = 0; i < records.size(); ++i) ASSERT_TRUE(ev[i].ParseFromString(records[i])) << i;

  EXPECT_EQ(ev[0].file_version(), "brain.Event:2");
  EXPECT_GT(ev[0].wall_time(), 1.7e9);
  EXPECT_EQ(ev[1].step(), 10);
  ASSERT_EQ(ev[1].summary().value_size(), 1);
  EXPECT_EQ(ev[1].summary().value(0).tag(), "loss/train");
  EXPECT_EQ(ev[1].summary().value(0).simple_value(), 2.5f);
  EXPECT_EQ(ev[2].summary().value(0).value_case(), pb::Summary::Value::kSimpleValue);  // 0 is still written

  const pb::HistogramProto& h = ev[3].summary().value(0).histo();
  EXPECT_EQ(ev[3].step(), 20);
  EXPECT_EQ(h.min(), 1);
  EXPECT_EQ(h.max(), 4);
  EXPECT_EQ(h.num(), 4);
  EXPECT_EQ(h.sum_squares(), 30);
  EXPECT_EQ(std::vector<double>(h.bucket_limit().begin(), h.bucket_limit().end()), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(std::vector<double>(h.bucket().begin(), h.bucket().end()), (std::vector<double>{2, 1, 1}));

  const pb::Summary::Image& img = ev[4].summary().value(0).image();
  EXPECT_EQ(ev[4].summary().value(0).tag(), "attention/layer0");
  EXPECT_EQ(img.width(), 7);
  EXPECT_EQ(img.height(), 5);
  EXPECT_EQ(img.colorspace(), 3);
  EXPECT_EQ(img.encoded_image_string(), "\x89PNG...");

  const pb::Summary::Value& text = ev[5].summary().value(0);
  EXPECT_EQ(text.metadata().plugin_data().plugin_name(), "text");
  EXPECT_EQ(text.tensor().dtype(), pb::DT_STRING);
  EXPECT_EQ(text.tensor().tensor_shape().dim_size(), 0);
  ASSERT_EQ(text.tensor().string_val_size(), 1);
  EXPECT_EQ(text.tensor().string_val(0), "To be\nor not");

  EXPECT_EQ(ev[6].step(), 30);
  EXPECT_EQ(ev[6].session_log().status(), pb::SessionLog::START);
  fs::remove_all(dir.parent_path());
}

TEST(TensorBoardEventWriter, NamesTheFolderItCannotCreate) {
  const fs::path dir = temp_dir("tb_writer_bad");
  std::ofstream(dir / "file") << "x";
  EXPECT_NE(error_of([&] { EventWriter w((dir / "file" / "tb").string()); }).find("file/tb: cannot create"), std::string::npos);
  fs::remove_all(dir);
}

namespace {
std::string small_corpus(const fs::path& dir) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "to be or not to be, that is the question " + std::to_string(i % 5) + "\n";
  const fs::path p = dir / "corpus.txt";
  std::ofstream(p) << text;
  return p.string();
}

ag::train::TrainConfig small_config(const fs::path& dir, const std::string& name) {
  ag::train::TrainConfig c;
  c.data_path = small_corpus(dir);
  c.out_dir = (dir / name).string();
  c.model = ag::models::GPTConfig{0, 2, 2, 16, 16, 0.1};  // with dropout: logging must not draw from its generator
  c.batch_size = 4;
  c.iters = 40;
  c.eval_every = 20;
  c.eval_iters = 2;
  c.log_every = 5;
  c.sample_tokens = 0;
  c.no_progress = true;
  return c;
}

std::shared_ptr<TrainLogger> logger_for(const ag::train::TrainConfig& c) {
  return std::make_shared<TrainLogger>((fs::path(c.out_dir) / "tb").string(), nullptr, /*sample_chars=*/50);
}

// Events of one file, parsed; and the steps at which tag was written.
std::vector<pb::Event> events_of(const std::string& path) {
  std::vector<pb::Event> out;
  for (const std::string& r : read_records(path)) {
    out.emplace_back();
    EXPECT_TRUE(out.back().ParseFromString(r));
  }
  return out;
}
std::vector<int64_t> steps_of(const std::vector<pb::Event>& ev, const std::string& tag) {
  std::vector<int64_t> steps;
  for (const auto& e : ev)
    for (const auto& v : e.summary().value())
      if (v.tag() == tag) steps.push_back(e.step());
  return steps;
}
}  // namespace

TEST(TensorBoardTrainLogger, ObservesWithoutChangingTheRunAndMarksTheResume) {
  const fs::path d = temp_dir("tb_logger");
  std::ostringstream log;
  const ag::train::TrainConfig straight = small_config(d, "straight");
  ag::train::train_lm(straight, log);

  // The same run with TensorBoard, interrupted by a real SIGINT after step 27, then resumed.
  ag::train::TrainConfig c = small_config(d, "tb");
  c.tensorboard = true;
  ag::train::RunHooks hooks;
  hooks.loggers = {logger_for(c)};
  hooks.after_step = [](int64_t it) {
    if (it == 27) std::raise(SIGINT);
  };
  ASSERT_TRUE(ag::train::train_lm(c, log, hooks).interrupted);
  ag::train::TrainConfig now;
  now.tensorboard = true;
  EXPECT_FALSE(ag::train::resume_lm(c.out_dir, now, {"tensorboard"}, log, {{logger_for(c)}}).interrupted);
  EXPECT_EQ(read_bytes(fs::path(c.out_dir) / "model.safetensors"), read_bytes(fs::path(straight.out_dir) / "model.safetensors"));

  std::vector<std::string> files;
  for (const auto& f : fs::directory_iterator(fs::path(c.out_dir) / "tb")) files.push_back(f.path().string());
  std::sort(files.begin(), files.end());  // same second: the second file has ".1" appended
  ASSERT_EQ(files.size(), 2u);
  const auto first = events_of(files[0]), second = events_of(files[1]);
  EXPECT_EQ(steps_of(first, "loss/val"), (std::vector<int64_t>{0, 20}));
  EXPECT_EQ(steps_of(first, "loss/train_batch"), (std::vector<int64_t>{5, 10, 15, 20, 25}));
  // The resume restarts at 28, after the checkpoint of the interrupted step: START there.
  ASSERT_GE(second.size(), 2u);
  EXPECT_EQ(second[0].file_version(), "brain.Event:2");
  EXPECT_EQ(second[1].session_log().status(), pb::SessionLog::START);
  EXPECT_EQ(second[1].step(), 28);
  EXPECT_EQ(steps_of(second, "loss/val"), (std::vector<int64_t>{40}));
  EXPECT_EQ(steps_of(second, "loss/train_batch"), (std::vector<int64_t>{30, 35, 40}));
  EXPECT_EQ(steps_of(second, "grads/blocks.1.mlp.fc.weight"), (std::vector<int64_t>{40}));
  EXPECT_EQ(steps_of(first, "grads/blocks.1.mlp.fc.weight"), (std::vector<int64_t>{20}));  // none before a step
  EXPECT_EQ(steps_of(first, "attention/layer1"), (std::vector<int64_t>{0, 20}));
  EXPECT_EQ(steps_of(first, "sample"), (std::vector<int64_t>{0, 20}));
  for (const auto& e : first)
    for (const auto& v : e.summary().value())
      if (v.tag() == "throughput/mfu") {
        EXPECT_GT(v.simple_value(), 0.0f);
      }

  // Asked for, but nobody attached the writer: refused rather than silently not logged.
  ag::train::TrainConfig orphan = small_config(d, "orphan");
  orphan.tensorboard = true;
  EXPECT_NE(error_of<std::invalid_argument>([&] { ag::train::train_lm(orphan, log); }).find("no writer is attached"),
            std::string::npos);
  fs::remove_all(d);
}

// metrics.jsonl carries every scalar TensorBoard gets: each tag names a key of the metrics
// lines of its kind (step lines for the per-step tags, evaluation lines for loss/train and
// loss/val), at the same steps, with the same values (to float32).
TEST(TensorBoardTrainLogger, MetricsJsonlCarriesEveryScalar) {
  const fs::path d = temp_dir("tb_metrics");
  std::ostringstream log;
  ag::train::TrainConfig c = small_config(d, "run");
  c.tensorboard = true;
  ag::train::train_lm(c, log, {{logger_for(c)}});
  std::vector<nlohmann::json> steps, evals;
  for (const auto& l : read_lines(fs::path(c.out_dir) / "metrics.jsonl")) {
    auto j = nlohmann::json::parse(l);
    (j["val_loss"].is_null() ? steps : evals).push_back(j);
  }
  std::vector<std::string> files;
  for (const auto& f : fs::directory_iterator(fs::path(c.out_dir) / "tb")) files.push_back(f.path().string());
  ASSERT_EQ(files.size(), 1u);
  std::set<std::string> tags;
  for (const auto& e : events_of(files[0]))
    for (const auto& v : e.summary().value()) {
      if (v.value_case() != pb::Summary::Value::kSimpleValue) continue;
      tags.insert(v.tag());
      const bool eval = v.tag() == "loss/train" || v.tag() == "loss/val";
      const std::string key = v.tag() == "loss/train" || v.tag() == "loss/train_batch" ? "train_loss"
                              : v.tag() == "loss/val"                               ? "val_loss"
                                                                                    : v.tag().substr(v.tag().rfind('/') + 1);
      const auto& rows = eval ? evals : steps;
      const auto row = std::find_if(rows.begin(), rows.end(), [&](const auto& j) { return j["iter"] == e.step(); });
      ASSERT_NE(row, rows.end()) << v.tag() << " at step " << e.step() << " has no metrics line";
      ASSERT_TRUE(row->contains(key) && (*row)[key].is_number()) << v.tag() << ": metrics.jsonl has no '" << key << "'";
      EXPECT_EQ(v.simple_value(), static_cast<float>((*row)[key].get<double>())) << v.tag() << " at " << e.step();
    }
  EXPECT_EQ(tags, (std::set<std::string>{"loss/train", "loss/val", "loss/train_batch", "lr", "grad_norm",
                                         "throughput/tokens_per_s", "throughput/ms_per_step", "throughput/mfu"}));
  fs::remove_all(d);
}
