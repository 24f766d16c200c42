#include "viz/font.h"

#include <stb_truetype.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "base/input_file.h"
#include "data/tokenizer.h"

#ifndef ATTOGRAD_DEFAULT_FONT
#define ATTOGRAD_DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
#endif

namespace ag::viz {

struct Font::Impl {
  std::string bytes;  // stb_truetype reads the font in place
  stbtt_fontinfo info{};
  int ascent = 0, descent = 0;  // font units; descent negative as stb reports it

  int glyph(char32_t cp) const {
    const int g = stbtt_FindGlyphIndex(&info, static_cast<int>(cp));
    return g ? g : stbtt_FindGlyphIndex(&info, '?');
  }
  float scale(double px) const { return stbtt_ScaleForPixelHeight(&info, static_cast<float>(px)); }
};

namespace {

// Coverage (0..1) of a line of text, one pixel of padding around it.
struct Mask {
  int w = 0, h = 0;
  int baseline = 0;  // row of the baseline
  int pad = 1;       // columns before the pen's start
  double advance = 0;
  std::vector<float> a;
};

std::u32string decode(std::string_view utf8) {
  const auto cps = data::decode_utf8(utf8, "text");
  return std::u32string(cps.begin(), cps.end());
}

}  // namespace

Font::Font(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->bytes = read_input_file({path, path, int64_t(64) << 20, "a font file may have at most 64 MiB", ""});
  const auto* data = reinterpret_cast<const unsigned char*>(impl_->bytes.data());
  const int offset = impl_->bytes.size() >= 12 ? stbtt_GetFontOffsetForIndex(data, 0) : -1;
  if (offset < 0 || !stbtt_InitFont(&impl_->info, data, offset))
    throw std::runtime_error(path + ": not a TrueType font stb_truetype can read");
  int gap = 0;
  stbtt_GetFontVMetrics(&impl_->info, &impl_->ascent, &impl_->descent, &gap);
}

Font::~Font() = default;

std::string Font::standard_path() {
  const char* env = std::getenv("ATTOGRAD_FONT");
  return env && *env ? env : ATTOGRAD_DEFAULT_FONT;
}

const Font& Font::standard() {
  static const std::unique_ptr<Font> font = [] {
    const std::string path = standard_path();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))  // exists, not open: a FIFO must not block here
      throw std::runtime_error(path + ": font not found; install the Debian package fonts-dejavu-core "
                               "(apt-get install fonts-dejavu-core) or set ATTOGRAD_FONT to a .ttf file");
    return std::make_unique<Font>(path);
  }();
  return *font;
}

bool Font::has_glyph(char32_t cp) const { return stbtt_FindGlyphIndex(&impl_->info, static_cast<int>(cp)) != 0; }

double Font::ascent(double px) const { return impl_->ascent * impl_->scale(px); }
double Font::descent(double px) const { return -impl_->descent * impl_->scale(px); }

double Font::width(std::string_view utf8, double px) const {
  const float s = impl_->scale(px);
  double w = 0;
  int prev = 0;
  for (char32_t cp : decode(utf8)) {
    const int g = impl_->glyph(cp);
    int adv = 0, lsb = 0;
    stbtt_GetGlyphHMetrics(&impl_->info, g, &adv, &lsb);
    if (prev) w += s * stbtt_GetGlyphKernAdvance(&impl_->info, prev, g);
    w += s * adv;
    prev = g;
  }
  return w;
}

void Font::draw(Image& img, double x, double y, std::string_view utf8, double px, Color c, HAlign h, VAlign v) const {
  draw_impl(img, x, y, utf8, px, c, h, v, false);
}

void Font::draw_vertical(Image& img, double x, double y, std::string_view utf8, double px, Color c, HAlign h,
                         VAlign v) const {
  draw_impl(img, x, y, utf8, px, c, h, v, true);
}

void Font::draw_impl(Image& img, double x, double y, std::string_view utf8, double px, Color c, HAlign h, VAlign v,
                     bool vertical) const {
  const stbtt_fontinfo* info = &impl_->info;
  const float s = impl_->scale(px);
  const std::u32string text = decode(utf8);

  // Render the line into a coverage mask, pen starting at (pad, baseline).
  Mask m;
  m.advance = width(utf8, px);
  m.baseline = static_cast<int>(std::ceil(impl_->ascent * s)) + 1;
  m.w = static_cast<int>(std::ceil(m.advance)) + 2 * m.pad + 2;
  m.h = m.baseline + static_cast<int>(std::ceil(-impl_->descent * s)) + 2;
  m.a.assign(static_cast<size_t>(m.w) * m.h, 0.0f);
  double pen = m.pad;
  int prev = 0;
  std::vector<unsigned char> glyph_px;
  for (char32_t cp : text) {
    const int g = impl_->glyph(cp);
    if (prev) pen += s * stbtt_GetGlyphKernAdvance(info, prev, g);
    const float shift = static_cast<float>(pen - std::floor(pen));
    int x0, y0, x1, y1;
    stbtt_GetGlyphBitmapBoxSubpixel(info, g, s, s, shift, 0, &x0, &y0, &x1, &y1);
    const int gw = x1 - x0, gh = y1 - y0;
    if (gw > 0 && gh > 0) {
      glyph_px.assign(static_cast<size_t>(gw) * gh, 0);
      stbtt_MakeGlyphBitmapSubpixel(info, glyph_px.data(), gw, gh, gw, s, s, shift, 0, g);
      const int ox = static_cast<int>(std::floor(pen)) + x0, oy = m.baseline + y0;
      for (int j = 0; j < gh; ++j)
        for (int i = 0; i < gw; ++i) {
          const int u = ox + i, w = oy + j;
          if (u < 0 || w < 0 || u >= m.w || w >= m.h) continue;
          float& dst = m.a[static_cast<size_t>(w) * m.w + u];
          dst = std::min(1.0f, dst + glyph_px[static_cast<size_t>(j) * gw + i] / 255.0f);
        }
    }
    int adv = 0, lsb = 0;
    stbtt_GetGlyphHMetrics(info, g, &adv, &lsb);
    pen += s * adv;
    prev = g;
  }

  // Place it: text coordinates (tx along the text, ty down across it) relative to the anchor.
  const double ox = h == HAlign::Left ? 0 : h == HAlign::Center ? -m.advance / 2 : -m.advance;
  const double asc = ascent(px), desc = descent(px);
  const double oy = v == VAlign::Baseline ? 0 : v == VAlign::Top ? asc : v == VAlign::Bottom ? -desc : (asc - desc) / 2;
  for (int w = 0; w < m.h; ++w)
    for (int u = 0; u < m.w; ++u) {
      const float a = m.a[static_cast<size_t>(w) * m.w + u];
      if (a <= 0) continue;
      if (!vertical)
        img.blend(static_cast<int>(std::lround(x + ox)) + u - m.pad, static_cast<int>(std::lround(y + oy)) + w - m.baseline, c, a);
      else
        img.blend(static_cast<int>(std::lround(x + oy)) + w - m.baseline,
                  static_cast<int>(std::lround(y - ox)) - (u - m.pad) - 1, c, a);
    }
}

}  // namespace ag::viz
