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

// The same weights, plus the gradient of the LM loss on the text (each character predicting the
// next; text needs at least 2 characters) with respect to every layer's and head's attention
// weights A (dLoss/dWeights, computed with ag::grad: no parameter's .grad is touched), float32
// (H, T, T) per layer in `grads`, and with respect to the scaled scores S, A = softmax(S)
// (dLoss/dScores = A ⊙ (dA − rowsum(A ⊙ dA)), the softmax backward, in `score_grads`).
// The softmax discards a constant per row of dLoss/dWeights, so dLoss/dScores, signed, is what
// drives learning. The weights' rows have T positions; the loss uses T - 1 predictions, so the
// last query's row of gradient is 0; query 0 sees key 0 alone, so its score row is 0 too.
struct AttentionGrads {
  AttentionMaps maps;
  std::vector<Tensor> grads;        // dLoss/dWeights, float32 (H, T, T) per layer
  std::vector<Tensor> score_grads;  // dLoss/dScores, float32 (H, T, T) per layer
  double loss = 0;
};
AttentionGrads capture_attention_grads(const models::LanguageModel& model, const data::CharTokenizer& tokenizer,
                                       std::string_view text);
// attention_grads.safetensors: layer{i} = dLoss/dWeights F32 (H, T, T), with the metadata of
// save_attention plus format "attograd.attention_grads" and loss; with scores = true, the
// score gradients instead (layer{i} = dLoss/dScores, format "attograd.attention_score_grads").
void save_attention_grads(const std::string& path, const AttentionGrads& g, const data::CharTokenizer& tokenizer,
                          const std::string& checkpoint, bool scores = false);
// Why row q of a head's dLoss/dScores is empty (all zero), or "" when it is not: the last query
// predicts nothing inside the text; a query that sees one key alone has weight 1 whatever its
// score; a query with no visible key is masked.
std::string empty_score_row_reason(const AttentionGrads& g, int64_t layer, int64_t head, int64_t query);
// One head's weights beside its signed dLoss/dScores (diverging scale, white at zero, limits
// ±the head's largest magnitude), each with a colour bar; empty rows marked and explained.
Image render_attention_head_with_grad(const AttentionGrads& g, int64_t layer, int64_t head, int cell = 0);
// Every head of every layer, weights beside signed dLoss/dScores: a row per layer.
Image render_attention_grad_grid(const AttentionGrads& g, int cell = 0);

// A character as an axis label: newline "↵", space "␣", tab "⇥", other control characters
// "U+XXXX"-style "·"; everything else as itself.
std::string display_char(const std::string& ch);

// One head: the (T, T) map with the characters on both axes. cell 0 chooses the size.
Image render_attention_head(const AttentionMaps& maps, int64_t layer, int64_t head, int cell = 0);
// Every head of every layer in one image: a row per layer, a column per head, and the colour
// bar they share on the right.
Image render_attention_grid(const AttentionMaps& maps, int cell = 0);
// One row of that grid: the heads of one layer, with the colour bar.
Image render_attention_layer(const AttentionMaps& maps, int64_t layer, int cell = 0);

// Per head: the mean over queries of the entropy (bits) of its weights and of the distance
// q - k weighted by them (how far back it looks).
struct HeadStats {
  double entropy_bits = 0, mean_distance = 0;
};
HeadStats head_stats(const AttentionMaps& maps, int64_t layer, int64_t head);

}  // namespace ag::viz
