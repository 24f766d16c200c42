// Writes a TensorBoard event file: scalars, histograms, PNG images and text, each a serialized
// Event protobuf (tensorboard/event.proto) in a TFRecord (tensorboard/tfrecord.h). The file is
// DIR/events.out.tfevents.<unix time>.<hostname>, always a new file (never through a symbolic
// link: base/atomic_file.h's AppendFile); its first event says file_version
// "brain.Event:2". Every event goes to the OS as it is written, so that a TensorBoard watching
// DIR shows it while the run goes on, and a failed write (a full disk, ulimit -f) throws
// std::runtime_error naming the file at once: no event is lost in silence.
//
// This header needs no protobuf: only tensorboard/*.cpp and their tests include event.pb.h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/atomic_file.h"

namespace ag::tensorboard {

// TensorBoard's HistogramProto: bucket i counts the values in (limits[i-1], limits[i]], the
// first from min (inclusive).
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> limits, counts;
};

// `bins` equal-width buckets over [min, max] of the finite values (NaN and ±Inf are left out
// of every field; num counts the values kept). No finite value: one empty bucket at 0; all
// equal: one bucket holding them all. bins < 1 throws std::invalid_argument.
Histogram make_histogram(const std::vector<double>& values, int bins = 30);

// The file name TensorBoard looks for: "events.out.tfevents.<unix_time>.<host>".
std::string event_file_name(int64_t unix_time, const std::string& host);

class EventWriter {
 public:
  // Creates dir (with its parents) and a new event file in it (with ".1", ".2"... appended if
  // the name is taken). Throws std::runtime_error naming the path when it cannot.
  explicit EventWriter(const std::string& dir);

  const std::string& path() const { return path_; }

  void add_scalar(const std::string& tag, double value, int64_t step);
  void add_histogram(const std::string& tag, const Histogram& h, int64_t step);
  // png: a PNG file's bytes, RGB, width × height pixels.
  void add_image(const std::string& tag, const std::string& png, int width, int height, int64_t step);
  // Shown by TensorBoard's text dashboard, which reads it as Markdown.
  void add_text(const std::string& tag, const std::string& text, int64_t step);
  // A restart at step (a resumed run): TensorBoard forgets what it had at step and later.
  void add_session_start(int64_t step);

  // Every event is already with the OS (each add_* throws when its write fails); kept so that
  // callers can mark where a batch of events ends.
  void flush() {}

 private:
  void write_event(const std::string& serialized);
  std::string path_;
  std::unique_ptr<AppendFile> out_;
};

}  // namespace ag::tensorboard
