// Line plots: one or more panels stacked vertically that share the x axis, each with its own
// y axis, ticks at 1-2-5 steps, a light grid, and a legend in its upper right corner.
#pragma once
#include <string>
#include <vector>

#include "viz/image.h"

namespace ag::viz {

struct Series {
  std::string label;        // in the legend; "" keeps it out
  std::vector<double> x, y;  // same length; non-finite points are skipped (the line breaks)
  Color color;
  double line_width = 1.5;  // 0: points only
  double marker = 0;        // radius of a disc at each point; 0: none
};

struct Panel {
  std::string y_title;
  std::vector<Series> series;
  double weight = 1;  // share of the height
};

struct PlotOptions {
  int width = 900, height = 600;
  std::string title, x_title;
};

// Throws std::invalid_argument when no panel has a finite point or a series' x and y differ
// in length.
Image render_plot(const std::vector<Panel>& panels, const PlotOptions& options);

// Tick positions covering [lo, hi] at a step of 1, 2 or 5 × 10^k, at most about max_ticks of
// them (never more than 2 × max_ticks, whatever the values), all inside [lo, hi], increasing.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks);
// What an axis over [lo, hi] shows its ticks relative to: 0, unless the span is so small
// against the values (iterations 9e18 .. 9e18 + 1024, losses 1e17 .. 1e17 + 64) that ticks of
// the values themselves would print alike; then a round number at or below lo, which the
// axis title names ("step (+ 9e+18)").
double axis_offset(double lo, double hi);
// A tick value printed with the digits its step needs ("0.5", "2000", "3e-04").
std::string tick_label(double v, double step);

}  // namespace ag::viz
