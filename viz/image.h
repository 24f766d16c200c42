// Image: an RGB raster to draw plots on, written as PNG by stb_image_write (Debian libstb-dev).
// Coordinates are in pixels, x to the right and y down, with pixel (i, j) covering
// [i, i+1) × [j, j+1); lines and discs are antialiased by their coverage of each pixel.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ag::viz {

struct Color {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Color&) const = default;
};

// Linear interpolation between two colours, t in [0, 1].
Color mix(Color a, Color b, double t);

class Image {
 public:
  Image(int width, int height, Color background = {255, 255, 255});

  int width() const { return w_; }
  int height() const { return h_; }
  Color at(int x, int y) const;  // throws std::out_of_range outside the image
  const std::vector<uint8_t>& rgb() const { return px_; }  // rows top to bottom, 3 bytes a pixel

  // Paints c over pixel (x, y) with opacity alpha in [0, 1]; outside the image it does nothing.
  void blend(int x, int y, Color c, double alpha);
  // Fills the pixels whose centres lie in [x0, x1) × [y0, y1).
  void fill_rect(double x0, double y0, double x1, double y1, Color c);
  // A one-pixel frame just inside [x0, x1) × [y0, y1).
  void frame_rect(double x0, double y0, double x1, double y1, Color c);
  // A segment `width` pixels wide, with round ends.
  void line(double x0, double y0, double x1, double y1, Color c, double width = 1.0);
  void polyline(const std::vector<std::pair<double, double>>& points, Color c, double width = 1.0);
  void disc(double cx, double cy, double radius, Color c);
  // Copies src with its top-left corner at (x, y), clipped to this image.
  void paste(const Image& src, int x, int y);

  // Writes a PNG atomically (base/atomic_file.h: a new file renamed over path, never
  // through a symbolic link); throws std::runtime_error naming the path when it cannot.
  void save_png(const std::string& path) const;
  // The bytes of the same PNG file, in memory (e.g. for a TensorBoard image).
  std::string encode_png() const;

 private:
  int w_, h_;
  std::vector<uint8_t> px_;
};

// Images side by side, `columns` to a row, `gap` pixels apart and around, on bg; each cell of
// the grid is as large as the largest image.
Image tile(const std::vector<Image>& images, int columns, int gap = 8, Color bg = {255, 255, 255});

// Width and height from the IHDR chunk of a PNG file; throws std::runtime_error naming the
// path when it is not a PNG.
std::pair<int, int> png_dimensions(const std::string& path);

}  // namespace ag::viz
