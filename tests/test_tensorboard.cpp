// The TensorBoard event writer: CRC-32C and TFRecord framing against values from TensorBoard's
// own Python implementation, histograms, and event files parsed back with the protobuf classes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>

#include "tensorboard/event.pb.h"
#include "tensorboard/event_writer.h"
#include "tensorboard/tfrecord.h"
#include "tests/test_util.h"

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
    EXPECT_TRUE(std::regex_match(fs::path(path).filename().string(), std::regex(R"(events\.out\.tfevents\.\d{10}\..+)")))
        << path;
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
