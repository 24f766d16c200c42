// A heatmap of a rows × cols matrix: one square cell per entry coloured by its value, a label
// per row and per column (e.g. the characters of a prompt), axis titles, a title and a colour
// bar with its values. Cells marked as masked are drawn hatched grey whatever their value.
// Two colour scales: sequential (near-white to dark purple, for values such as weights) and
// diverging (blue for negative, white at zero, red for positive, for signed gradients: give it
// symmetric limits, vmin = −vmax, so that zero is white). A row can carry a mark right of the
// map, explained by a note under it ("* the last query predicts nothing inside the text").
#pragma once
#include <string>
#include <vector>

#include "viz/image.h"

namespace ag::viz {

struct HeatmapOptions {
  std::string title;                    // above the map
  std::string row_title, col_title;     // e.g. "query", "key"
  std::vector<std::string> row_labels;  // empty, or one per row (UTF-8)
  std::vector<std::string> col_labels;  // empty, or one per column
  std::vector<bool> masked;             // empty, or rows*cols, row-major
  int cell = 0;                         // pixels per cell; 0: about 720 / max(rows, cols), in 8..32
  double vmin = 0, vmax = 1;            // the colour scale's range
  double gamma = 1;                     // colour = scale(((v - vmin) / (vmax - vmin))^gamma)
  bool diverging = false;               // diverging_color instead of heat_color
  bool colorbar = true;
  std::vector<std::string> row_marks;   // empty, or one per row ("" for none): drawn right of the row
  std::vector<std::string> notes;       // lines under the map (what the marks mean)
};

// Where everything goes; render_heatmap draws exactly this.
struct HeatmapLayout {
  int cell = 0;
  double label_px = 0, title_px = 0;  // font sizes
  int map_x = 0, map_y = 0;           // top-left corner of cell (0, 0)
  int width = 0, height = 0;          // of the whole image
};
HeatmapLayout heatmap_layout(int rows, int cols, const HeatmapOptions& options);

// values: rows*cols, row-major. Throws std::invalid_argument on mismatched sizes.
Image render_heatmap(const std::vector<double>& values, int rows, int cols, const HeatmapOptions& options);

// The sequential colour scale, t in [0, 1]: near-white through amber and red to dark purple.
Color heat_color(double t);
// The diverging colour scale, t in [0, 1]: dark blue (0) through white (0.5) to dark red (1).
Color diverging_color(double t);
// The colour of value v under the options' scale (what a cell of that value is painted).
Color scale_color(double v, const HeatmapOptions& options);

// The options' colour bar alone, `height` pixels tall (at least 100), with its ticks and values:
// for a grid of panels that share one scale.
Image render_colorbar(const HeatmapOptions& options, int height);

}  // namespace ag::viz
