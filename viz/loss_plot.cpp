#include "viz/loss_plot.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/input_file.h"

#include "viz/line_plot.h"

namespace ag::viz {

std::vector<MetricsRow> read_metrics(const std::string& path) {
  const std::string text = read_input_file({path, path, int64_t(256) << 20, "a metrics file read here may have at most 256 MiB",
                                            "is it a run folder written by attograd train?"});
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t nl = text.find('\n', at);
    // attograd writes each line with its newline in one write: a last line without one is
    // where a run was cut (killed, or the disk full mid-write), not data.
    if (nl == std::string::npos) break;
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  std::vector<MetricsRow> rows;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (lines[k].find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const auto j = nlohmann::json::parse(lines[k]);
      MetricsRow r;
      r.iter = j.at("iter").get<int64_t>();
      r.train_loss = j.at("train_loss").is_null() ? NAN : j.at("train_loss").get<double>();
      if (j.contains("val_loss") && !j["val_loss"].is_null()) r.val_loss = j["val_loss"].get<double>();
      r.lr = j.contains("lr") && !j["lr"].is_null() ? j["lr"].get<double>() : NAN;
      rows.push_back(r);
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ":" + std::to_string(k + 1) + ": not a metrics line: " + e.what());
    }
  }
  if (rows.empty()) throw std::runtime_error(path + ": holds no metrics yet");
  std::stable_sort(rows.begin(), rows.end(), [](const MetricsRow& a, const MetricsRow& b) { return a.iter < b.iter; });
  return rows;
}

Image render_loss_plot(const std::vector<MetricsRow>& rows, const std::string& title, int width, int height) {
  Series batch{"train (one batch)", {}, {}, Color{150, 190, 230}, 1.0, 0};
  Series train{"train (eval)", {}, {}, Color{31, 90, 170}, 2.0, 3.5};
  Series val{"val (eval)", {}, {}, Color{222, 110, 30}, 2.0, 3.5};
  Series lr{"", {}, {}, Color{90, 90, 90}, 1.5, 0};
  for (const MetricsRow& r : rows) {
    if (r.val_loss) {
      train.x.push_back(static_cast<double>(r.iter)), train.y.push_back(r.train_loss);
      val.x.push_back(static_cast<double>(r.iter)), val.y.push_back(*r.val_loss);
    } else {
      batch.x.push_back(static_cast<double>(r.iter)), batch.y.push_back(r.train_loss);
    }
    if (lr.x.empty() || lr.x.back() != static_cast<double>(r.iter)) lr.x.push_back(static_cast<double>(r.iter)), lr.y.push_back(r.lr);
  }
  std::vector<Panel> panels;
  Panel loss{"loss (nats/char)", {}, 3};
  if (!batch.x.empty()) loss.series.push_back(batch);
  if (!train.x.empty()) loss.series.push_back(train), loss.series.push_back(val);
  panels.push_back(loss);
  panels.push_back(Panel{"learning rate", {lr}, 1});
  return render_plot(panels, PlotOptions{width, height, title, "step"});
}

Image render_runs_plot(const std::vector<NamedRun>& runs, const std::string& title, int width, int height) {
  static const Color kPalette[] = {{31, 90, 170}, {222, 110, 30}, {44, 160, 44}, {214, 39, 40},
                                   {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127}};
  Panel loss{"loss (nats/char)", {}, 3};
  Panel lr_panel{"learning rate", {}, 1};
  for (size_t k = 0; k < runs.size(); ++k) {
    const Color c = kPalette[k % (sizeof kPalette / sizeof kPalette[0])];
    Series val{runs[k].name + " val", {}, {}, c, 2.0, 3.0};
    Series train{runs[k].name + " train", {}, {}, c, 1.0, 0};
    Series lr{"", {}, {}, c, 1.5, 0};
    for (const MetricsRow& r : runs[k].rows) {
      const double x = static_cast<double>(r.iter);
      if (r.val_loss) val.x.push_back(x), val.y.push_back(*r.val_loss), train.x.push_back(x), train.y.push_back(r.train_loss);
      if (lr.x.empty() || lr.x.back() != x) lr.x.push_back(x), lr.y.push_back(r.lr);
    }
    if (!val.x.empty()) loss.series.push_back(val), loss.series.push_back(train);
    lr_panel.series.push_back(lr);
  }
  return render_plot({loss, lr_panel}, PlotOptions{width, height, title, "step"});
}

}  // namespace ag::viz
