#include "viz/line_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "viz/font.h"

namespace ag::viz {

namespace {
const Color kInk{40, 40, 40}, kGrid{232, 232, 232}, kAxis{120, 120, 120};
constexpr double kTickPx = 12, kTitlePx = 16, kAxisTitlePx = 13, kLegendPx = 12;

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
  // Widened a little so that nothing touches the frame; a single value gets 10% (or 1) around it.
  Range padded(double frac) const {
    Range r = *this;
    const double span = hi - lo;
    const double pad = span > 0 ? span * frac : (lo != 0 ? std::abs(lo) * 0.1 : 1.0);
    r.lo -= pad, r.hi += pad;
    return r;
  }
};

// "step (+ 9e+18)": the title of an axis whose ticks are relative to off (axis_offset).
std::string with_offset(const std::string& title, double off) {
  if (off == 0) return title;
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {  // the shortest form that reads back exactly
    std::snprintf(buf, sizeof buf, "%.*g", digits, off);
    if (std::strtod(buf, nullptr) == off) break;
  }
  return title.empty() ? std::string("+ ") + buf : title + " (+ " + buf + ")";
}
}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (!(hi > lo) || max_ticks < 2 || !std::isfinite(hi - lo)) return {lo};
  // The smallest 1-2-5 step whose ticks inside [lo, hi] number at most max_ticks.
  const double mag0 = std::pow(10.0, std::floor(std::log10((hi - lo) / max_ticks)));
  double step = mag0;
  for (int k = 0; k < 12; ++k) {
    step = mag0 * std::pow(10.0, k / 3) * (k % 3 == 0 ? 1 : k % 3 == 1 ? 2 : 5);
    if (std::floor(hi / step + 1e-9) - std::ceil(lo / step - 1e-9) + 1 <= max_ticks) break;
  }
  // Counted, not stepped until past hi: when lo / step is beyond 2^53 (steps 9e18 .. 9e18 +
  // 1024), adding 1 to it changes nothing and such a loop would never end. Ticks that round
  // to the same double are kept once.
  const double first = std::ceil(lo / step - 1e-9), last = std::floor(hi / step + 1e-9);
  const double count = std::min(last - first + 1, static_cast<double>(2 * max_ticks));
  std::vector<double> out;
  for (int i = 0; i < count; ++i) {
    const double v = (first + i) * step;
    if (v > hi + step * 1e-9) break;
    if (out.empty() || v > out.back()) out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  if (out.empty()) out.push_back(lo);
  return out;
}

double axis_offset(double lo, double hi) {
  const double mag = std::max(std::abs(lo), std::abs(hi)), span = hi - lo;
  if (!(span > 0) || !(span < 1e-5 * mag) || !std::isfinite(mag)) return 0;
  const double p = std::pow(10.0, std::ceil(std::log10(span)) + 1);  // a round number a decade above the span
  const double off = std::floor(lo / p) * p;
  return off <= lo ? off : lo;
}

std::string tick_label(double v, double step) {
  char buf[32];
  if (v == 0) return "0";
  if (step < 1e-3 || std::abs(v) >= 1e6) {
    // scientific, with the digits the step needs relative to the value's magnitude
    const int digits = std::clamp(static_cast<int>(std::floor(std::log10(std::abs(v))) - std::floor(std::log10(step))), 0, 6);
    std::snprintf(buf, sizeof buf, "%.*e", digits, v);
    std::string t = buf;  // "1.0e-03" -> "1e-03", as its neighbours "5e-04" read
    const size_t e = t.find('e');
    size_t m = e;
    while (m > 0 && t[m - 1] == '0') --m;
    if (m > 0 && t[m - 1] == '.') --m;
    return t.substr(0, m) + t.substr(e);
  } else {
    const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  return buf;
}

Image render_plot(const std::vector<Panel>& panels, const PlotOptions& o) {
  if (panels.empty()) throw std::invalid_argument("plot: no panels");
  const Font& f = Font::standard();
  Image img(o.width, o.height);

  Range xr;
  std::vector<Range> yr(panels.size());
  for (size_t p = 0; p < panels.size(); ++p)
    for (const Series& s : panels[p].series) {
      if (s.x.size() != s.y.size())
        throw std::invalid_argument("plot: series '" + s.label + "' has " + std::to_string(s.x.size()) + " x and " +
                                    std::to_string(s.y.size()) + " y values");
      for (size_t i = 0; i < s.x.size(); ++i)
        if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) xr.add(s.x[i]), yr[p].add(s.y[i]);
    }
  if (xr.empty()) throw std::invalid_argument("plot: nothing to draw (no finite points)");
  if (xr.hi == xr.lo) xr = xr.padded(0);  // one x value: give it some room
  const double xoff = axis_offset(xr.lo, xr.hi);
  const std::string x_title = with_offset(o.x_title, xoff);

  // Margins: the y tick labels' width is known only after choosing the ticks.
  const double line_h = f.ascent(kTickPx) + f.descent(kTickPx);
  const int top = 12 + (o.title.empty() ? 0 : static_cast<int>(f.ascent(kTitlePx) + f.descent(kTitlePx)) + 10);
  const int bottom = 10 + static_cast<int>(line_h) + 6 + (x_title.empty() ? 0 : static_cast<int>(line_h) + 8);
  const int gap = 18;  // between panels
  std::vector<std::vector<double>> yticks(panels.size());  // relative to yoff
  std::vector<Range> yview(panels.size());
  std::vector<double> yoff(panels.size(), 0.0);
  double label_w = 0;
  double weights = 0;
  for (const Panel& p : panels) weights += p.weight;
  const double avail = o.height - top - bottom - gap * (static_cast<double>(panels.size()) - 1);
  for (size_t p = 0; p < panels.size(); ++p) {
    yview[p] = yr[p].empty() ? Range{0, 1} : yr[p].padded(0.06);
    yoff[p] = axis_offset(yview[p].lo, yview[p].hi);
    const int max_ticks = std::max(4, static_cast<int>(avail * panels[p].weight / weights / 45));
    yticks[p] = nice_ticks(yview[p].lo - yoff[p], yview[p].hi - yoff[p], max_ticks);
    const double step = yticks[p].size() > 1 ? yticks[p][1] - yticks[p][0] : 1;
    for (double v : yticks[p]) label_w = std::max(label_w, f.width(tick_label(v, step), kTickPx));
  }
  const int left = 12 + static_cast<int>(f.ascent(kAxisTitlePx) + f.descent(kAxisTitlePx)) + 8 + static_cast<int>(label_w) + 8;
  const int right = o.width - 16;
  if (right - left < 50 || avail < 50 * static_cast<double>(panels.size()))
    throw std::invalid_argument("plot: " + std::to_string(o.width) + "x" + std::to_string(o.height) + " is too small");

  if (!o.title.empty()) f.draw(img, (left + right) / 2.0, 10, o.title, kTitlePx, kInk, HAlign::Center, VAlign::Top);
  const Range xv = xr;  // steps start at the data's first x: no padding on x
  const auto xticks = nice_ticks(xv.lo - xoff, xv.hi - xoff, std::max(2, (right - left) / 90));  // relative to xoff
  const double xstep = xticks.size() > 1 ? xticks[1] - xticks[0] : 1;
  auto X = [&](double x) { return left + (x - xv.lo) / (xv.hi - xv.lo) * (right - left); };
  auto X_rel = [&](double v) { return left + (v - (xv.lo - xoff)) / (xv.hi - xv.lo) * (right - left); };

  double y_top = top;
  for (size_t p = 0; p < panels.size(); ++p) {
    const double h = avail * panels[p].weight / weights, y_bot = y_top + h;
    const Range& yv = yview[p];
    auto Y = [&](double y) { return y_bot - (y - yv.lo) / (yv.hi - yv.lo) * h; };
    auto Y_rel = [&](double v) { return y_bot - (v - (yv.lo - yoff[p])) / (yv.hi - yv.lo) * h; };
    // grid and ticks
    const double ystep = yticks[p].size() > 1 ? yticks[p][1] - yticks[p][0] : 1;
    for (double v : yticks[p]) {
      const double y = Y_rel(v);
      img.fill_rect(left, y - 0.5, right, y + 0.5, kGrid);
      img.fill_rect(left - 4, y - 0.5, left, y + 0.5, kAxis);
      f.draw(img, left - 7, y, tick_label(v, ystep), kTickPx, kInk, HAlign::Right, VAlign::Middle);
    }
    for (double v : xticks) {
      const double x = X_rel(v);
      img.fill_rect(x - 0.5, y_top, x + 0.5, y_bot, kGrid);
      img.fill_rect(x - 0.5, y_bot, x + 0.5, y_bot + 4, kAxis);
      if (p + 1 == panels.size()) f.draw(img, x, y_bot + 6, tick_label(v, xstep), kTickPx, kInk, HAlign::Center, VAlign::Top);
    }
    img.frame_rect(left, y_top, right + 1, y_bot + 1, kAxis);
    if (!panels[p].y_title.empty())
      f.draw_vertical(img, 12, (y_top + y_bot) / 2, with_offset(panels[p].y_title, yoff[p]), kAxisTitlePx, kInk,
                      HAlign::Center, VAlign::Top);

    // series, clipped to the panel by construction (the ranges hold every point)
    for (const Series& s : panels[p].series) {
      std::vector<std::pair<double, double>> run;
      auto flush = [&] {
        if (s.line_width > 0 && run.size() > 1) img.polyline(run, s.color, s.line_width);
        run.clear();
      };
      for (size_t i = 0; i < s.x.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) {
          flush();
          continue;
        }
        run.emplace_back(X(s.x[i]), Y(s.y[i]));
      }
      flush();
      if (s.marker > 0)
        for (size_t i = 0; i < s.x.size(); ++i)
          if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) img.disc(X(s.x[i]), Y(s.y[i]), s.marker, s.color);
    }

    // legend, upper right
    std::vector<const Series*> shown;
    double lw = 0;
    for (const Series& s : panels[p].series)
      if (!s.label.empty()) shown.push_back(&s), lw = std::max(lw, f.width(s.label, kLegendPx));
    if (!shown.empty()) {
      const double row = f.ascent(kLegendPx) + f.descent(kLegendPx) + 4;
      const double bw = lw + 44, bh = row * shown.size() + 8;
      const double bx = right - bw - 8, by = y_top + 8;
      img.fill_rect(bx, by, bx + bw, by + bh, Color{255, 255, 255});
      img.frame_rect(bx, by, bx + bw, by + bh, Color{200, 200, 200});
      for (size_t k = 0; k < shown.size(); ++k) {
        const double cy = by + 4 + row * (k + 0.5);
        const Series& s = *shown[k];
        if (s.line_width > 0) img.line(bx + 8, cy, bx + 32, cy, s.color, std::max(s.line_width, 1.5));
        if (s.marker > 0) img.disc(bx + 20, cy, s.marker, s.color);
        f.draw(img, bx + 38, cy, s.label, kLegendPx, kInk, HAlign::Left, VAlign::Middle);
      }
    }
    y_top = y_bot + gap;
  }
  if (!x_title.empty())
    f.draw(img, (left + right) / 2.0, o.height - 8, x_title, kAxisTitlePx, kInk, HAlign::Center, VAlign::Bottom);
  return img;
}

}  // namespace ag::viz
