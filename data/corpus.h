// A text corpus loaded for training: its tokenizer and its token ids, split 90/10 into
// train and validation as nanoGPT does (the first int(0.9 * n) tokens train, the rest validate).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace ag::data {

struct Corpus {
  std::string path;
  CharTokenizer tokenizer;         // built from the whole text
  std::vector<int64_t> train_ids;  // first 90%
  std::vector<int64_t> val_ids;    // last 10%

  int64_t num_tokens() const { return static_cast<int64_t>(train_ids.size() + val_ids.size()); }
};

// Size of the train split for a corpus of n tokens: int64(0.9 * n).
int64_t train_split_size(int64_t n_tokens);

// Reads a UTF-8 text file: a regular file of at most kMaxTextFileBytes (data/text_file.h).
// Throws std::runtime_error naming the file and what to do when it is missing, unreadable (a
// directory, a device, a FIFO, no permission), too large, empty, not valid UTF-8, or too short
// for block_size: each split needs at least block_size + 1 tokens (one window of inputs plus
// the next-character target), and no corpus serves a block_size above kMaxTextFileBytes / 10.
// block_size < 1 throws std::invalid_argument.
Corpus load_corpus(const std::string& path, int64_t block_size);

}  // namespace ag::data
