#include "data/corpus.h"

#include <algorithm>
#include <stdexcept>

#include "base/checked.h"
#include "data/text_file.h"

namespace ag::data {

namespace {

constexpr const char* kHint = "check the path, or run scripts/find-corpus.sh to locate or download tiny shakespeare";

[[noreturn]] void corpus_error(const std::string& path, const std::string& what) {
  throw std::runtime_error("corpus '" + path + "': " + what);
}

// The smallest corpus length whose train and val splits both hold need tokens. The val split
// is about a tenth of the text, so the answer is just above 10 * (need - 1); search from below it.
int64_t min_corpus_tokens(int64_t need) {
  int64_t n = std::max<int64_t>(1, checked::mul(10, need, "corpus size for block_size") - 20);
  while (train_split_size(n) < need || n - train_split_size(n) < need) ++n;
  return n;
}

}  // namespace

int64_t train_split_size(int64_t n_tokens) {
  return static_cast<int64_t>(0.9 * static_cast<double>(n_tokens));
}

Corpus load_corpus(const std::string& path, int64_t block_size) {
  if (block_size < 1) throw std::invalid_argument("load_corpus: block_size must be at least 1, got " + std::to_string(block_size));

  // A block no corpus attograd reads could hold (each split needs block_size + 1 characters).
  if (block_size > kMaxTextFileBytes / 10)
    corpus_error(path, "block_size " + std::to_string(block_size) + " is larger than any corpus can serve (at most " +
                           std::to_string(kMaxTextFileBytes) + " bytes, split 90/10); use a smaller block_size");
  const std::string bytes = read_text_file(path, "corpus '" + path + "'", kHint);
  if (bytes.empty()) corpus_error(path, "file is empty; it must contain the training text (UTF-8)");

  std::vector<char32_t> text;
  try {
    text = decode_utf8(bytes, path);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + "; the corpus must be UTF-8 text (convert it, e.g. with iconv)");
  }

  const int64_t n = static_cast<int64_t>(text.size());
  const int64_t n_train = train_split_size(n);
  const int64_t need = block_size + 1;  // a window of block_size inputs plus one more target
  const int64_t n_val = n - n_train;
  if (n_train < need || n_val < need) {
    const bool train_short = n_train < need;
    corpus_error(path, "too short for block_size " + std::to_string(block_size) + ": it has " + std::to_string(n) +
                           " characters, so its " + (train_short ? "train split (first 90%)" : "validation split (last 10%)") +
                           " has " + std::to_string(train_short ? n_train : n_val) + " but needs at least " +
                           std::to_string(need) + "; use a text of at least " +
                           std::to_string(min_corpus_tokens(need)) + " characters or a smaller block_size");
  }

  Corpus c;
  c.path = path;
  c.tokenizer = CharTokenizer::from_text(text);
  std::vector<int64_t> ids = c.tokenizer.encode(text, path);
  c.val_ids.assign(ids.begin() + n_train, ids.end());
  ids.resize(n_train);
  c.train_ids = std::move(ids);
  return c;
}

}  // namespace ag::data
