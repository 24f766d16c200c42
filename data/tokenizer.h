// Character-level tokenizer over Unicode code points, plus the strict UTF-8 codec it uses.
// Token ids are the positions of the characters in the sorted vocabulary, so a vocabulary
// stored as a list of characters (the checkpoint's JSON array) rebuilds the same ids.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ag::data {

// Strict UTF-8 decoding: rejects overlong forms, surrogates, code points above U+10FFFF,
// truncated sequences and stray continuation bytes. Errors throw std::runtime_error
// "<source_name>: invalid UTF-8 at byte offset N (reason)", N being where the bad sequence starts.
std::vector<char32_t> decode_utf8(std::string_view bytes, const std::string& source_name);

// UTF-8 encoding; a surrogate or a value above U+10FFFF throws std::invalid_argument.
std::string encode_utf8(char32_t cp);
std::string encode_utf8(std::u32string_view cps);

// "U+00E9"; at least four hex digits.
std::string code_point_name(char32_t cp);
// A character for error messages: "'e' (U+0065)", "'\n' (U+000A)", or just "U+0001" for
// control characters and invalid code points.
std::string describe_char(char32_t cp);

class CharTokenizer {
 public:
  CharTokenizer() = default;

  // The vocabulary is the sorted set of distinct code points of text.
  static CharTokenizer from_text(std::u32string_view text);
  static CharTokenizer from_text(const std::vector<char32_t>& text) {
    return from_text(std::u32string_view(text.data(), text.size()));
  }
  // Rebuilds a tokenizer from chars(): each entry must be exactly one code point in UTF-8,
  // in strictly increasing order. Anything else throws std::runtime_error.
  static CharTokenizer from_chars(const std::vector<std::string>& chars);

  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
  // Each character as a UTF-8 string, in id order.
  std::vector<std::string> chars() const;
  // The vocabulary as code points, in id order.
  const std::u32string& code_points() const { return vocab_; }

  // Id of a code point, or -1 when it is not in the vocabulary.
  int64_t id_of(char32_t cp) const;
  bool contains(char32_t cp) const { return id_of(cp) >= 0; }

  // A character outside the vocabulary throws std::runtime_error naming context_name
  // (e.g. "prompt"), the character and its position (in characters).
  std::vector<int64_t> encode(std::u32string_view text, const std::string& context_name = "text") const;
  std::vector<int64_t> encode(const std::vector<char32_t>& text, const std::string& context_name = "text") const {
    return encode(std::u32string_view(text.data(), text.size()), context_name);
  }
  // UTF-8 input: invalid UTF-8 throws too, naming context_name.
  std::vector<int64_t> encode(std::string_view utf8, const std::string& context_name = "text") const;

  // Ids to UTF-8 text; an id outside [0, vocab_size) throws std::out_of_range.
  std::string decode(std::span<const int64_t> ids) const;
  std::string decode(const std::vector<int64_t>& ids) const { return decode(std::span<const int64_t>(ids)); }

  bool operator==(const CharTokenizer& o) const { return vocab_ == o.vocab_; }

 private:
  explicit CharTokenizer(std::u32string sorted_vocab);

  std::u32string vocab_;  // sorted, distinct; the id of a character is its index
  // Direct id lookup for code points below min(max code point + 1, 65536), -1 for absent
  // ones; this covers nearly every text and makes encoding a corpus a table lookup per
  // character. Larger code points use a binary search over vocab_.
  std::vector<int32_t> table_;
};

}  // namespace ag::data
