// LanguageModel: what the trainer, checkpoints and every command need of a character language
// model, so that any model registered in models/registry.h trains, samples, evaluates and
// resumes through the same code. Named parameters, state_dict / load_state_dict and train/eval
// mode come from nn::Module.
//
//   forward(idx)          int64 (B, T) -> logits (B, T, V), T ≤ block_size; position t predicts t+1
//   loss(idx, targets)    mean next-token cross-entropy over every position of the batch
//   generate(prompt, ...) appends sampled tokens, each seeing at most block_size tokens, with
//                         whatever cache the model keeps (the GPT: a KV cache per layer)
//   model_config()        what it was built from: name, vocab_size, block_size and its own fields
//   parameter_table()     its parameters as one table (models/param_table.h): names, shapes,
//                         init, optimizer groups, as its modules describe them; its size and
//                         FLOPs derive from it
//
// Capabilities that only some models have are queried, never assumed: attention() is nullptr
// for a model without attention to show (`attograd attend` then says so).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"
#include "models/model_config.h"
#include "models/param_table.h"
#include "nn/module.h"

namespace ag::models {

// Options for generate(). temperature 0 means greedy (argmax), and so does any temperature so
// small that a logit divided by it overflows (e.g. 1e-320).
struct SampleOptions {
  int64_t max_new_tokens = 200;
  double temperature = 1.0;
  int64_t top_k = 0;      // 0: no top-k filtering
  bool use_cache = true;  // false: recompute the whole window for every token (for testing)
  // Called with each new token as soon as it is chosen (to stream text, or to stop on Ctrl-C);
  // returning false stops the generation there.
  std::function<bool(int64_t token)> on_token = nullptr;
};

// A model whose attention weights can be read: one (B, H, T, T) tensor per layer, row q the
// weights of query q over the keys (zero for the keys it may not see).
class AttentionIntrospection {
 public:
  virtual ~AttentionIntrospection() = default;
  // forward(idx), also returning every layer's attention weights.
  virtual Tensor forward_with_attention(const Tensor& idx, std::vector<Tensor>& attn_weights) const = 0;
};

class LanguageModel : public nn::Module {
 public:
  virtual Tensor forward(const Tensor& idx) const = 0;
  virtual Tensor loss(const Tensor& idx, const Tensor& targets) const = 0;
  // Needs a non-empty prompt of ids in [0, vocab_size).
  virtual std::vector<int64_t> generate(const std::vector<int64_t>& prompt, const SampleOptions& opt,
                                        Generator& gen) const = 0;
  virtual ModelConfig model_config() const = 0;
  // One line for logs: "4 layers, 4 heads, 128 wide, block 64".
  virtual std::string summary() const = 0;
  // Its parameters: names, shapes, init, optimizer groups, FLOPs (models/param_table.h), as
  // its modules describe them. A model of repeated layers gives them as one layer repeated.
  virtual ParamTable parameter_table() const { return ParamTable::of(*this); }
  // Matmul FLOPs of one forward pass over (batch, block_size), from the parameter table; the
  // backward costs twice that.
  double forward_flops(int64_t batch) const { return parameter_table().forward_flops(batch * block_size()); }
  virtual const AttentionIntrospection* attention() const { return nullptr; }

  int64_t block_size() const { return model_config().block_size; }
  int64_t vocab_size() const { return model_config().vocab_size; }
};

// Picks the next token from logits (V) of the last position.
int64_t sample_token(const std::vector<double>& logits, double temperature, int64_t top_k, Generator& gen);

// Throws std::invalid_argument naming the first id of prompt outside [0, vocab_size), or an
// empty prompt.
void check_prompt(const std::vector<int64_t>& prompt, int64_t vocab_size);

}  // namespace ag::models
