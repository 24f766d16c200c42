#include "data/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace ag::data {

namespace {

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

[[noreturn]] void utf8_error(const std::string& source_name, size_t offset, const std::string& reason) {
  throw std::runtime_error(source_name + ": invalid UTF-8 at byte offset " + std::to_string(offset) + " (" +
                           reason + ")");
}

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(b));
  return buf;
}

}  // namespace

std::vector<char32_t> decode_utf8(std::string_view bytes, const std::string& source_name) {
  std::vector<char32_t> out;
  out.reserve(bytes.size());  // an upper bound: at least one byte per code point
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const auto lead = static_cast<unsigned char>(bytes[i]);
    if (lead < 0x80) {  // ASCII, the common case
      out.push_back(lead);
      ++i;
      continue;
    }
    size_t len;
    char32_t cp;
    if (lead < 0xC0) {
      utf8_error(source_name, i, "unexpected continuation byte " + hex_byte(lead));
    } else if (lead < 0xE0) {
      len = 2, cp = lead & 0x1F;
    } else if (lead < 0xF0) {
      len = 3, cp = lead & 0x0F;
    } else if (lead < 0xF8) {
      len = 4, cp = lead & 0x07;
    } else {
      utf8_error(source_name, i, "invalid byte " + hex_byte(lead));
    }
    // Check the continuation bytes first, so that a cut-off sequence is reported as such
    // rather than as whatever value its first bytes happen to make.
    for (size_t k = 1; k < len; ++k) {
      if (i + k >= n) utf8_error(source_name, i, "truncated sequence at end of input");
      const auto b = static_cast<unsigned char>(bytes[i + k]);
      if (!is_continuation(b))
        utf8_error(source_name, i, "truncated sequence: byte " + hex_byte(b) + " at offset " +
                                       std::to_string(i + k) + " is not a continuation byte");
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr char32_t min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_for_len[len]) utf8_error(source_name, i, "overlong encoding of " + code_point_name(cp));
    if (cp >= 0xD800 && cp <= 0xDFFF) utf8_error(source_name, i, "encoded surrogate " + code_point_name(cp));
    if (cp > 0x10FFFF) utf8_error(source_name, i, "code point above U+10FFFF");
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string encode_utf8(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    if (cp >= 0xD800 && cp <= 0xDFFF)
      throw std::invalid_argument("encode_utf8: " + code_point_name(cp) + " is a surrogate, not a character");
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp <= 0x10FFFF) {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    throw std::invalid_argument("encode_utf8: " + code_point_name(cp) + " is above U+10FFFF");
  }
  return s;
}

std::string encode_utf8(std::u32string_view cps) {
  std::string s;
  s.reserve(cps.size());
  for (char32_t cp : cps) s += encode_utf8(cp);
  return s;
}

std::string code_point_name(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

std::string describe_char(char32_t cp) {
  const std::string name = code_point_name(cp);
  // Control characters would garble the message; invalid code points cannot be printed.
  const bool control = cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
  const bool invalid = (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF;
  std::string shown;
  switch (cp) {
    case U'\n': shown = "\\n"; break;
    case U'\t': shown = "\\t"; break;
    case U'\r': shown = "\\r"; break;
    default:
      if (control || invalid) return name;
      shown = encode_utf8(cp);
  }
  // Built with append: GCC 12 gives a false -Wrestrict warning for "'" + std::string + ....
  std::string out = "'";
  out.append(shown).append("' (").append(name).append(")");
  return out;
}

// ---- CharTokenizer ------------------------------------------------------------------------

CharTokenizer::CharTokenizer(std::u32string sorted_vocab) : vocab_(std::move(sorted_vocab)) {
  if (vocab_.empty()) return;
  const char32_t table_end = std::min<char32_t>(vocab_.back() + 1, 0x10000);
  table_.assign(table_end, -1);
  for (size_t id = 0; id < vocab_.size() && vocab_[id] < table_end; ++id) table_[vocab_[id]] = static_cast<int32_t>(id);
}

CharTokenizer CharTokenizer::from_text(std::u32string_view text) {
  // Mark what occurs in the common range with a bitmap; sort only the rare larger code points.
  std::vector<bool> seen(0x10000, false);
  std::u32string vocab, large;
  for (char32_t cp : text) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      throw std::invalid_argument("CharTokenizer::from_text: " + code_point_name(cp) + " is not a valid character");
    if (cp < 0x10000) {
      if (!seen[cp]) seen[cp] = true, vocab += cp;
    } else {
      large += cp;
    }
  }
  std::sort(vocab.begin(), vocab.end());
  std::sort(large.begin(), large.end());
  large.erase(std::unique(large.begin(), large.end()), large.end());
  return CharTokenizer(vocab + large);
}

CharTokenizer CharTokenizer::from_chars(const std::vector<std::string>& chars) {
  if (chars.empty()) throw std::runtime_error("vocabulary: the list of characters is empty");
  std::u32string vocab;
  vocab.reserve(chars.size());
  for (size_t i = 0; i < chars.size(); ++i) {
    const std::string where = "vocabulary entry " + std::to_string(i);
    const std::vector<char32_t> cps = decode_utf8(chars[i], where);
    if (cps.size() != 1)
      throw std::runtime_error(where + ": expected exactly one character, got " + std::to_string(cps.size()));
    const char32_t cp = cps[0];
    if (!vocab.empty() && cp <= vocab.back()) {
      if (cp == vocab.back())
        throw std::runtime_error(where + ": duplicate character " + describe_char(cp));
      throw std::runtime_error(where + ": " + describe_char(cp) + " is out of order (must come after " +
                               describe_char(vocab.back()) + "; the vocabulary is sorted by code point)");
    }
    vocab += cp;
  }
  return CharTokenizer(std::move(vocab));
}

std::vector<std::string> CharTokenizer::chars() const {
  std::vector<std::string> out;
  out.reserve(vocab_.size());
  for (char32_t cp : vocab_) out.push_back(encode_utf8(cp));
  return out;
}

int64_t CharTokenizer::id_of(char32_t cp) const {
  if (cp < table_.size()) return table_[cp];
  if (cp < 0x10000) return -1;  // beyond the table but in its range: larger than every entry
  const auto it = std::lower_bound(vocab_.begin(), vocab_.end(), cp);
  return (it != vocab_.end() && *it == cp) ? static_cast<int64_t>(it - vocab_.begin()) : -1;
}

std::vector<int64_t> CharTokenizer::encode(std::u32string_view text, const std::string& context_name) const {
  std::vector<int64_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const int64_t id = id_of(text[i]);
    if (id < 0)
      throw std::runtime_error(context_name + ": character " + describe_char(text[i]) + " at position " +
                               std::to_string(i) + " is not in the vocabulary (" +
                               std::to_string(vocab_size()) + " characters, taken from the training text)");
    ids[i] = id;
  }
  return ids;
}

std::vector<int64_t> CharTokenizer::encode(std::string_view utf8, const std::string& context_name) const {
  return encode(decode_utf8(utf8, context_name), context_name);
}

std::string CharTokenizer::decode(std::span<const int64_t> ids) const {
  std::string out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= vocab_size())
      throw std::out_of_range("CharTokenizer::decode: id " + std::to_string(id) + " at position " +
                              std::to_string(i) + " is outside the vocabulary [0, " +
                              std::to_string(vocab_size()) + ")");
    out += encode_utf8(vocab_[id]);
  }
  return out;
}

}  // namespace ag::data
