#include "viz/image.h"

#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "base/atomic_file.h"
#include "base/input_file.h"

namespace ag::viz {

Color mix(Color a, Color b, double t) {
  t = std::clamp(t, 0.0, 1.0);
  auto m = [t](uint8_t x, uint8_t y) { return static_cast<uint8_t>(std::lround(x + (y - x) * t)); };
  return {m(a.r, b.r), m(a.g, b.g), m(a.b, b.b)};
}

Image::Image(int width, int height, Color bg) : w_(width), h_(height) {
  if (width <= 0 || height <= 0 || width > 16384 || height > 16384)
    throw std::invalid_argument("Image: size " + std::to_string(width) + "x" + std::to_string(height) +
                                " is outside 1..16384");
  px_.resize(static_cast<size_t>(w_) * h_ * 3);
  for (size_t i = 0; i < px_.size(); i += 3) px_[i] = bg.r, px_[i + 1] = bg.g, px_[i + 2] = bg.b;
}

Color Image::at(int x, int y) const {
  if (x < 0 || y < 0 || x >= w_ || y >= h_) throw std::out_of_range("Image::at: pixel outside the image");
  const size_t i = (static_cast<size_t>(y) * w_ + x) * 3;
  return {px_[i], px_[i + 1], px_[i + 2]};
}

void Image::blend(int x, int y, Color c, double alpha) {
  if (x < 0 || y < 0 || x >= w_ || y >= h_ || !(alpha > 0)) return;
  alpha = std::min(alpha, 1.0);
  uint8_t* p = &px_[(static_cast<size_t>(y) * w_ + x) * 3];
  auto b = [alpha](uint8_t dst, uint8_t src) { return static_cast<uint8_t>(std::lround(dst + (src - dst) * alpha)); };
  p[0] = b(p[0], c.r), p[1] = b(p[1], c.g), p[2] = b(p[2], c.b);
}

void Image::fill_rect(double x0, double y0, double x1, double y1, Color c) {
  // pixel i is inside when its centre i + 0.5 is in [x0, x1)
  const int i0 = std::max(0, static_cast<int>(std::ceil(x0 - 0.5))), i1 = std::min(w_, static_cast<int>(std::ceil(x1 - 0.5)));
  const int j0 = std::max(0, static_cast<int>(std::ceil(y0 - 0.5))), j1 = std::min(h_, static_cast<int>(std::ceil(y1 - 0.5)));
  for (int j = j0; j < j1; ++j)
    for (int i = i0; i < i1; ++i) {
      uint8_t* p = &px_[(static_cast<size_t>(j) * w_ + i) * 3];
      p[0] = c.r, p[1] = c.g, p[2] = c.b;
    }
}

void Image::frame_rect(double x0, double y0, double x1, double y1, Color c) {
  fill_rect(x0, y0, x1, y0 + 1, c);
  fill_rect(x0, y1 - 1, x1, y1, c);
  fill_rect(x0, y0, x0 + 1, y1, c);
  fill_rect(x1 - 1, y0, x1, y1, c);
}

void Image::line(double x0, double y0, double x1, double y1, Color c, double width) {
  // Coverage of each pixel near the segment: 1 within width/2 of it, fading to 0 over one pixel.
  const double r = std::max(width, 0.5) / 2;
  const int i0 = std::max(0, static_cast<int>(std::floor(std::min(x0, x1) - r - 1)));
  const int i1 = std::min(w_ - 1, static_cast<int>(std::ceil(std::max(x0, x1) + r + 1)));
  const int j0 = std::max(0, static_cast<int>(std::floor(std::min(y0, y1) - r - 1)));
  const int j1 = std::min(h_ - 1, static_cast<int>(std::ceil(std::max(y0, y1) + r + 1)));
  const double dx = x1 - x0, dy = y1 - y0, len2 = dx * dx + dy * dy;
  for (int j = j0; j <= j1; ++j)
    for (int i = i0; i <= i1; ++i) {
      const double px = i + 0.5, py = j + 0.5;
      const double t = len2 > 0 ? std::clamp(((px - x0) * dx + (py - y0) * dy) / len2, 0.0, 1.0) : 0.0;
      const double ex = px - (x0 + t * dx), ey = py - (y0 + t * dy);
      const double cover = std::clamp(r + 0.5 - std::sqrt(ex * ex + ey * ey), 0.0, 1.0);
      blend(i, j, c, cover);
    }
}

void Image::polyline(const std::vector<std::pair<double, double>>& pts, Color c, double width) {
  if (pts.size() == 1) disc(pts[0].first, pts[0].second, width / 2, c);
  for (size_t k = 1; k < pts.size(); ++k) line(pts[k - 1].first, pts[k - 1].second, pts[k].first, pts[k].second, c, width);
}

void Image::disc(double cx, double cy, double radius, Color c) {
  const int i0 = std::max(0, static_cast<int>(std::floor(cx - radius - 1)));
  const int i1 = std::min(w_ - 1, static_cast<int>(std::ceil(cx + radius + 1)));
  const int j0 = std::max(0, static_cast<int>(std::floor(cy - radius - 1)));
  const int j1 = std::min(h_ - 1, static_cast<int>(std::ceil(cy + radius + 1)));
  for (int j = j0; j <= j1; ++j)
    for (int i = i0; i <= i1; ++i) {
      const double d = std::hypot(i + 0.5 - cx, j + 0.5 - cy);
      blend(i, j, c, std::clamp(radius + 0.5 - d, 0.0, 1.0));
    }
}

void Image::paste(const Image& src, int x, int y) {
  for (int j = 0; j < src.h_; ++j) {
    const int ty = y + j;
    if (ty < 0 || ty >= h_) continue;
    for (int i = 0; i < src.w_; ++i) {
      const int tx = x + i;
      if (tx < 0 || tx >= w_) continue;
      const uint8_t* s = &src.px_[(static_cast<size_t>(j) * src.w_ + i) * 3];
      uint8_t* d = &px_[(static_cast<size_t>(ty) * w_ + tx) * 3];
      d[0] = s[0], d[1] = s[1], d[2] = s[2];
    }
  }
}

Image tile(const std::vector<Image>& images, int columns, int gap, Color bg) {
  if (images.empty() || columns <= 0) throw std::invalid_argument("tile: no images, or columns ≤ 0");
  int cw = 0, ch = 0;
  for (const Image& im : images) cw = std::max(cw, im.width()), ch = std::max(ch, im.height());
  const int n = static_cast<int>(images.size()), cols = std::min(columns, n), rows = (n + cols - 1) / cols;
  Image out(cols * cw + (cols + 1) * gap, rows * ch + (rows + 1) * gap, bg);
  for (int k = 0; k < n; ++k) out.paste(images[k], gap + (k % cols) * (cw + gap), gap + (k / cols) * (ch + gap));
  return out;
}

void Image::save_png(const std::string& path) const {
  // Atomically, never through a symbolic link, every write checked (base/atomic_file.h).
  write_file_atomically(path, encode_png());
}

std::string Image::encode_png() const {
  std::string png;
  auto append = [](void* to, void* data, int size) { static_cast<std::string*>(to)->append(static_cast<const char*>(data), size); };
  if (!stbi_write_png_to_func(append, &png, w_, h_, 3, px_.data(), w_ * 3))
    throw std::runtime_error("Image: cannot encode a PNG");
  return png;
}

std::pair<int, int> png_dimensions(const std::string& path) {
  const std::string bytes = read_input_file({path, path, int64_t(1) << 30, "a PNG file read here may have at most 1 GiB", ""});
  unsigned char h[24] = {};
  std::memcpy(h, bytes.data(), std::min<size_t>(bytes.size(), sizeof h));
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() < 24 || !std::equal(sig, sig + 8, h) || std::string(h + 12, h + 16) != "IHDR")
    throw std::runtime_error(path + ": not a PNG file");
  auto be32 = [&](int o) { return static_cast<int>((uint32_t(h[o]) << 24) | (uint32_t(h[o + 1]) << 16) | (uint32_t(h[o + 2]) << 8) | h[o + 3]); };
  return {be32(16), be32(20)};
}

}  // namespace ag::viz
