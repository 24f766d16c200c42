// A heatmap of a rows × cols matrix: one square cell per entry coloured by its value, a label
// per row and per column (e.g. the characters of a prompt), axis titles, a title and a colour
// bar. Cells marked as masked are drawn hatched grey whatever their value.
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
  bool colorbar = true;
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

// The colour scale, t in [0, 1]: near-white through amber and red to dark purple.
Color heat_color(double t);

}  // namespace ag::viz
