// Text on an Image, rasterised with stb_truetype (Debian libstb-dev) from a TrueType font:
// by default DejaVu Sans Mono from Debian's fonts-dejavu-core (the path is fixed at configure
// time), or the file named by the environment variable ATTOGRAD_FONT.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "viz/image.h"

namespace ag::viz {

enum class HAlign { Left, Center, Right };           // which end of the text sits at x
enum class VAlign { Baseline, Top, Middle, Bottom };  // which line of the text sits at y

class Font {
 public:
  // Reads a .ttf file; throws std::runtime_error naming the path when it cannot.
  explicit Font(const std::string& path);
  ~Font();
  Font(const Font&) = delete;
  Font& operator=(const Font&) = delete;

  // The font of every plot: ATTOGRAD_FONT if set, else the configured DejaVu Sans Mono.
  // Loaded once; a missing file throws std::runtime_error naming it and the Debian package.
  static const Font& standard();
  static std::string standard_path();

  bool has_glyph(char32_t cp) const;
  // Sizes in pixels for a font of px pixels (ascender to descender).
  double width(std::string_view utf8, double px) const;
  double ascent(double px) const;
  double descent(double px) const;  // positive: how far glyphs reach below the baseline

  // Draws UTF-8 text with its (halign, valign) point at (x, y). A character the font lacks
  // is drawn as '?'.
  void draw(Image& img, double x, double y, std::string_view utf8, double px, Color c, HAlign h = HAlign::Left,
            VAlign v = VAlign::Baseline) const;
  // The same, turned 90° counter-clockwise (reading upwards), for vertical axis titles:
  // halign is along the text (Left = bottom end), valign across it.
  void draw_vertical(Image& img, double x, double y, std::string_view utf8, double px, Color c,
                     HAlign h = HAlign::Center, VAlign v = VAlign::Middle) const;

 private:
  struct Impl;
  void draw_impl(Image& img, double x, double y, std::string_view utf8, double px, Color c, HAlign h, VAlign v,
                 bool vertical) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ag::viz
