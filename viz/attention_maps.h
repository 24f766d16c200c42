// Attention maps of a language model with attention (the GPT) on a prompt: every layer's and head's weights, saved as
// safetensors and drawn as heatmaps with the prompt's characters on both axes.
//
// attention.safetensors holds layer{i}: F32 (H, T, T), row q = the weights of query position q
// over the key positions (each row sums to 1; the keys k > q it may not see are exactly 0),
// and __metadata__: format "attograd.attention", text (a JSON string), chars (a JSON array,
// one character per position), vocab (JSON array), n_layer, n_head, checkpoint.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "autograd/tensor.h"
#include "data/tokenizer.h"
#include "models/language_model.h"
#include "viz/image.h"

namespace ag::viz {

struct AttentionMaps {
  std::string text;                // the prompt, UTF-8
  std::vector<std::string> chars;  // its characters, one per position
  std::vector<Tensor> layers;      // float32 (H, T, T) per layer
  int64_t n_head() const { return layers.empty() ? 0 : layers[0].size(0); }
  int64_t length() const { return static_cast<int64_t>(chars.size()); }
};

// Runs the model (in eval mode) on text. Throws std::runtime_error when the model has no
// attention (model.attention() is null), or text is empty, longer than the model's block_size,
// or holds a character outside the vocabulary (naming it).
AttentionMaps capture_attention(const models::LanguageModel& model, const data::CharTokenizer& tokenizer,
                                std::string_view text);

void save_attention(const std::string& path, const AttentionMaps& maps, const data::CharTokenizer& tokenizer,
                    const std::string& checkpoint);

// A character as an axis label: newline "↵", space "␣", tab "⇥", other control characters
// "U+XXXX"-style "·"; everything else as itself.
std::string display_char(const std::string& ch);

// One head: the (T, T) map with the characters on both axes. cell 0 chooses the size.
Image render_attention_head(const AttentionMaps& maps, int64_t layer, int64_t head, int cell = 0);
// Every head of every layer in one image: a row per layer, a column per head.
Image render_attention_grid(const AttentionMaps& maps, int cell = 0);

// Per head: the mean over queries of the entropy (bits) of its weights and of the distance
// q - k weighted by them (how far back it looks).
struct HeadStats {
  double entropy_bits = 0, mean_distance = 0;
};
HeadStats head_stats(const AttentionMaps& maps, int64_t layer, int64_t head);

}  // namespace ag::viz
