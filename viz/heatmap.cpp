#include "viz/heatmap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "viz/font.h"

namespace ag::viz {

namespace {
const Color kInk{40, 40, 40}, kMasked{228, 230, 236}, kHatch{200, 203, 212};
constexpr int kGap = 6;        // between labels and the map
constexpr int kBarWidth = 14;  // colour bar

double max_width(const std::vector<std::string>& labels, double px) {
  double w = 0;
  for (const auto& l : labels) w = std::max(w, Font::standard().width(l, px));
  return w;
}

double scale_pos(double v, const HeatmapOptions& o) {
  const double t = o.vmax > o.vmin ? std::clamp((v - o.vmin) / (o.vmax - o.vmin), 0.0, 1.0) : 0.0;
  return o.gamma == 1 ? t : std::pow(t, o.gamma);
}

std::string tick_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v == 0 ? 0.0 : v);  // no "-0"
  return buf;
}

// Colour-bar ticks: the ends, and in between values that read well on the (gamma) scale; the
// middle (zero) of a diverging scale.
std::vector<double> bar_ticks(const HeatmapOptions& o) {
  std::vector<double> t = {o.vmin};
  const double span = o.vmax - o.vmin;
  for (double f : o.gamma < 1 ? std::vector<double>{0.01, 0.05, 0.1, 0.25, 0.5} : std::vector<double>{0.25, 0.5, 0.75})
    t.push_back(o.vmin + f * span);
  t.push_back(o.vmax);
  return t;
}

constexpr double kTickPx = 11, kNotePx = 12;

int colorbar_width(const HeatmapOptions& o) {
  double tick_w = 0;
  for (double v : bar_ticks(o)) tick_w = std::max(tick_w, Font::standard().width(tick_text(v), kTickPx));
  return kBarWidth + 4 + static_cast<int>(std::ceil(tick_w));
}

// The bar with its top-left corner at (bx, by).
void draw_colorbar(Image& img, int bx, int by, int bh, const HeatmapOptions& o) {
  const Font& f = Font::standard();
  for (int y = 0; y < bh; ++y) {
    const double t = 1.0 - (y + 0.5) / bh;  // top = vmax
    img.fill_rect(bx, by + y, bx + kBarWidth, by + y + 1, o.diverging ? diverging_color(t) : heat_color(t));
  }
  img.frame_rect(bx - 1, by - 1, bx + kBarWidth + 1, by + bh + 1, Color{150, 150, 150});
  for (double v : bar_ticks(o)) {
    const double y = by + (1.0 - scale_pos(v, o)) * bh;
    img.fill_rect(bx + kBarWidth, y - 0.5, bx + kBarWidth + 3, y + 0.5, kInk);
    f.draw(img, bx + kBarWidth + 4, y, tick_text(v), kTickPx, kInk, HAlign::Left, VAlign::Middle);
  }
}

double note_line() { return Font::standard().ascent(kNotePx) + Font::standard().descent(kNotePx) + 2; }
}  // namespace

Color diverging_color(double t) {
  static const Color stops[] = {{5, 48, 97}, {67, 147, 195}, {255, 255, 255}, {214, 96, 77}, {103, 0, 31}};
  t = std::clamp(std::isfinite(t) ? t : 0.5, 0.0, 1.0) * 4;
  const int k = std::min(3, static_cast<int>(t));
  return mix(stops[k], stops[k + 1], t - k);
}

Color scale_color(double v, const HeatmapOptions& o) {
  return o.diverging ? diverging_color(scale_pos(v, o)) : heat_color(scale_pos(v, o));
}

Image render_colorbar(const HeatmapOptions& o, int height) {
  const int bh = std::max(height - 2 * kGap, 100);
  Image img(kGap + colorbar_width(o) + kGap, bh + 2 * kGap);
  draw_colorbar(img, kGap, kGap, bh, o);
  return img;
}

Color heat_color(double t) {
  static const Color stops[] = {{252, 251, 246}, {253, 214, 120}, {238, 120, 52}, {176, 36, 62}, {62, 12, 70}};
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 4;
  const int k = std::min(3, static_cast<int>(t));
  return mix(stops[k], stops[k + 1], t - k);
}

HeatmapLayout heatmap_layout(int rows, int cols, const HeatmapOptions& o) {
  if (rows <= 0 || cols <= 0) throw std::invalid_argument("heatmap: the matrix is empty");
  HeatmapLayout L;
  L.cell = o.cell > 0 ? o.cell : std::clamp(720 / std::max(rows, cols), 8, 32);
  L.label_px = std::clamp(L.cell * 0.9, 9.0, 16.0);
  L.title_px = 15;
  const Font& f = Font::standard();
  const double line = f.ascent(L.label_px) + f.descent(L.label_px);
  const double row_w = max_width(o.row_labels, L.label_px);
  const double col_w = max_width(o.col_labels, L.label_px);
  const bool col_vertical = col_w > L.cell - 1;
  const double col_h = o.col_labels.empty() ? 0 : (col_vertical ? col_w : line);
  const int axis_title = static_cast<int>(std::ceil(f.ascent(12) + f.descent(12))) + kGap;

  L.map_x = kGap + (o.row_title.empty() ? 0 : axis_title) + static_cast<int>(std::ceil(row_w)) + kGap;
  L.map_y = kGap + (o.title.empty() ? 0 : static_cast<int>(std::ceil(f.ascent(L.title_px) + f.descent(L.title_px))) + kGap);
  int right = kGap;
  double marks_w = 0;
  for (const auto& m : o.row_marks) marks_w = std::max(marks_w, f.width(m, L.label_px));
  if (marks_w > 0) right += static_cast<int>(std::ceil(marks_w)) + 2;
  if (o.colorbar) right += 2 * kGap + colorbar_width(o);
  const int notes_h = static_cast<int>(std::ceil(o.notes.size() * note_line()));
  const int bottom = kGap + static_cast<int>(std::ceil(col_h)) + (o.col_title.empty() ? 0 : axis_title) + kGap + notes_h;
  double notes_w = 0;
  for (const auto& n : o.notes) notes_w = std::max(notes_w, f.width(n, kNotePx));
  L.width = std::max(L.map_x + cols * L.cell + right, kGap + static_cast<int>(std::ceil(notes_w)) + kGap);
  L.height = std::max(L.map_y + rows * L.cell + bottom, L.map_y + 120 + notes_h);
  return L;
}

Image render_heatmap(const std::vector<double>& values, int rows, int cols, const HeatmapOptions& o) {
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  if (values.size() != n) throw std::invalid_argument("heatmap: " + std::to_string(values.size()) + " values for " +
                                                      std::to_string(rows) + "x" + std::to_string(cols));
  if (!o.masked.empty() && o.masked.size() != n) throw std::invalid_argument("heatmap: the mask must have rows*cols entries");
  if (!o.row_marks.empty() && o.row_marks.size() != static_cast<size_t>(rows))
    throw std::invalid_argument("heatmap: one row mark (or \"\") per row");
  if (!o.row_labels.empty() && o.row_labels.size() != static_cast<size_t>(rows))
    throw std::invalid_argument("heatmap: one row label per row");
  if (!o.col_labels.empty() && o.col_labels.size() != static_cast<size_t>(cols))
    throw std::invalid_argument("heatmap: one column label per column");
  const HeatmapLayout L = heatmap_layout(rows, cols, o);
  const Font& f = Font::standard();
  Image img(L.width, L.height);
  const int c = L.cell, x0 = L.map_x, y0 = L.map_y;

  if (!o.title.empty()) f.draw(img, x0, kGap, o.title, L.title_px, kInk, HAlign::Left, VAlign::Top);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const size_t k = static_cast<size_t>(i) * cols + j;
      const int cx = x0 + j * c, cy = y0 + i * c;
      if (!o.masked.empty() && o.masked[k]) {
        img.fill_rect(cx, cy, cx + c, cy + c, kMasked);
        for (int y = cy; y < cy + c; ++y)
          for (int x = cx; x < cx + c; ++x)
            if ((x + y) % 5 == 0) img.blend(x, y, kHatch, 1);
      } else {
        img.fill_rect(cx, cy, cx + c, cy + c, scale_color(values[k], o));
      }
    }
  img.frame_rect(x0 - 1, y0 - 1, x0 + cols * c + 1, y0 + rows * c + 1, Color{150, 150, 150});

  // Row labels right-aligned left of the map; column labels under it (turned when too wide).
  for (int i = 0; i < static_cast<int>(o.row_labels.size()); ++i)
    f.draw(img, x0 - kGap, y0 + (i + 0.5) * c, o.row_labels[i], L.label_px, kInk, HAlign::Right, VAlign::Middle);
  const double col_w = max_width(o.col_labels, L.label_px);
  const bool col_vertical = col_w > c - 1;
  const int labels_y = y0 + rows * c + kGap;
  for (int j = 0; j < static_cast<int>(o.col_labels.size()); ++j) {
    if (col_vertical)
      f.draw_vertical(img, x0 + (j + 0.5) * c, labels_y, o.col_labels[j], L.label_px, kInk, HAlign::Right, VAlign::Middle);
    else
      f.draw(img, x0 + (j + 0.5) * c, labels_y, o.col_labels[j], L.label_px, kInk, HAlign::Center, VAlign::Top);
  }
  const double line = f.ascent(L.label_px) + f.descent(L.label_px);
  const double col_h = o.col_labels.empty() ? 0 : (col_vertical ? col_w : line);
  if (!o.col_title.empty())
    f.draw(img, x0 + cols * c / 2.0, labels_y + col_h + kGap, o.col_title, 12, kInk, HAlign::Center, VAlign::Top);
  if (!o.row_title.empty())
    f.draw_vertical(img, kGap, y0 + rows * c / 2.0, o.row_title, 12, kInk, HAlign::Center, VAlign::Top);

  double marks_w = 0;
  for (int i = 0; i < static_cast<int>(o.row_marks.size()); ++i) {
    marks_w = std::max(marks_w, f.width(o.row_marks[i], L.label_px));
    f.draw(img, x0 + cols * c + 3, y0 + (i + 0.5) * c, o.row_marks[i], L.label_px, kInk, HAlign::Left, VAlign::Middle);
  }
  if (o.colorbar) {
    const int bx = x0 + cols * c + (marks_w > 0 ? static_cast<int>(std::ceil(marks_w)) + 2 : 0) + 2 * kGap;
    draw_colorbar(img, bx, y0, std::max(rows * c, 100), o);
  }
  const double notes_y = L.height - kGap - o.notes.size() * note_line();
  for (size_t i = 0; i < o.notes.size(); ++i)
    f.draw(img, kGap, notes_y + i * note_line(), o.notes[i], kNotePx, kInk, HAlign::Left, VAlign::Top);
  return img;
}

}  // namespace ag::viz
