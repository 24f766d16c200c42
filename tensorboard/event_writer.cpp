#include "tensorboard/event_writer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "tensorboard/event.pb.h"
#include "tensorboard/tfrecord.h"

namespace ag::tensorboard {

namespace fs = std::filesystem;
using namespace ::attograd::tensorboard;  // the messages of event.proto

Histogram make_histogram(const std::vector<double>& values, int bins) {
  if (bins < 1) throw std::invalid_argument("make_histogram: bins must be ≥ 1");
  Histogram h;
  bool any = false;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    h.min = any ? std::min(h.min, v) : v;
    h.max = any ? std::max(h.max, v) : v;
    any = true;
    h.num += 1;
    h.sum += v;
    h.sum_squares += v * v;
  }
  if (!any || h.min == h.max) {  // nothing to spread: one bucket ending at the value
    h.limits = {h.max};
    h.counts = {h.num};
    return h;
  }
  const double width = (h.max - h.min) / bins;
  h.limits.resize(bins);
  for (int i = 0; i < bins; ++i) h.limits[i] = h.min + width * (i + 1);
  h.limits.back() = h.max;  // exactly, whatever the rounding of width * bins
  h.counts.assign(bins, 0.0);
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    // (limits[i-1], limits[i]]: the smallest i with v ≤ limits[i]
    int i = static_cast<int>(std::ceil((v - h.min) / width)) - 1;
    i = std::clamp(i, 0, bins - 1);
    while (i > 0 && v <= h.limits[i - 1]) --i;  // rounding of the division, either way
    while (i < bins - 1 && v > h.limits[i]) ++i;
    h.counts[i] += 1;
  }
  return h;
}

std::string event_file_name(int64_t unix_time, const std::string& host) {
  return "events.out.tfevents." + std::to_string(unix_time) + "." + host;
}

namespace {
double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  return buf;
}

Event new_event(int64_t step) {
  Event e;
  e.set_wall_time(wall_time());
  e.set_step(step);
  return e;
}

Summary::Value* new_value(Event& e, const std::string& tag) {
  Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  return v;
}
}  // namespace

EventWriter::EventWriter(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create the TensorBoard folder: " + ec.message());
  const std::string base = (fs::path(dir) / event_file_name(static_cast<int64_t>(wall_time()), hostname())).string();
  path_ = base;
  for (int n = 1; !(out_ = AppendFile::create_new(path_)); ++n) {  // a new file: ".1", ".2"... when the name is taken
    if (n > 1000) throw std::runtime_error(base + ": cannot create the event file: 1000 names taken");
    path_ = base + "." + std::to_string(n);
  }
  Event e = new_event(0);
  e.set_file_version("brain.Event:2");
  write_event(e.SerializeAsString());
}

void EventWriter::write_event(const std::string& serialized) { out_->write(frame_record(serialized)); }

void EventWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  Event e = new_event(step);
  new_value(e, tag)->set_simple_value(static_cast<float>(value));
  write_event(e.SerializeAsString());
}

void EventWriter::add_histogram(const std::string& tag, const Histogram& h, int64_t step) {
  Event e = new_event(step);
  HistogramProto* p = new_value(e, tag)->mutable_histo();
  p->set_min(h.min);
  p->set_max(h.max);
  p->set_num(h.num);
  p->set_sum(h.sum);
  p->set_sum_squares(h.sum_squares);
  for (double l : h.limits) p->add_bucket_limit(l);
  for (double c : h.counts) p->add_bucket(c);
  write_event(e.SerializeAsString());
}

void EventWriter::add_image(const std::string& tag, const std::string& png, int width, int height, int64_t step) {
  Event e = new_event(step);
  Summary::Image* img = new_value(e, tag)->mutable_image();
  img->set_height(height);
  img->set_width(width);
  img->set_colorspace(3);  // RGB
  img->set_encoded_image_string(png);
  write_event(e.SerializeAsString());
}

void EventWriter::add_text(const std::string& tag, const std::string& text, int64_t step) {
  Event e = new_event(step);
  Summary::Value* v = new_value(e, tag);
  v->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  TensorProto* t = v->mutable_tensor();
  t->set_dtype(DT_STRING);
  t->mutable_tensor_shape();  // no dims: one string
  t->add_string_val(text);
  write_event(e.SerializeAsString());
}

void EventWriter::add_session_start(int64_t step) {
  Event e = new_event(step);
  e.mutable_session_log()->set_status(SessionLog::START);
  write_event(e.SerializeAsString());
}

}  // namespace ag::tensorboard
