// CharMLP: the neural language model of Bengio et al. (2003) on characters, as Karpathy's
// makemore builds it, the baseline to compare the transformer with. Each character is
// predicted from the block_size characters up to it, embedded and concatenated:
//
//   ctx[b, t, j] = x[b, t - block_size + 1 + j], or PAD (= V) before the window   (B, T, C)   C = block_size
//   e = wte(ctx)                                           (B, T, C, E)   wte: (V + 1, E), row V the padding
//   h = tanh(e.reshape(B, T, C·E) · fcᵀ + fc.bias)         (B, T, H)
//   logits = h · headᵀ + head.bias                         (B, T, V)
//
// The loss is nanoGPT's: the mean cross-entropy over every position of the (B, T) batch, so
// the first positions of a window see padding where the corpus had characters, just as a
// prompt shorter than the context does when sampling. Generation needs no cache: each new
// character costs one pass over a context of fixed size.
//
// Parameters (param_table): wte.weight, fc.weight, fc.bias, head.weight, head.bias; PyTorch's
// default init (embedding N(0, 1), linear layers U(±1/√fan_in)), the modules' own, as
// makemore's MLP. It has no dropout.
#pragma once
#include <memory>

#include "models/language_model.h"
#include "nn/embedding.h"
#include "nn/linear.h"

namespace ag::models {

class CharMLP : public LanguageModel {
 public:
  // Uses cfg.vocab_size, block_size, n_embd and hidden; throws std::invalid_argument for a
  // non-positive one or a dropout other than 0.
  CharMLP(const ModelConfig& cfg, DType dtype = DType::Float32, Generator& gen = default_generator());
  static void validate(const ModelConfig& cfg);

  Tensor forward(const Tensor& idx) const override;
  Tensor loss(const Tensor& idx, const Tensor& targets) const override;
  std::vector<int64_t> generate(const std::vector<int64_t>& prompt, const SampleOptions& opt,
                                Generator& gen) const override;
  ModelConfig model_config() const override { return cfg_; }
  std::string summary() const override;
  ParamTable parameter_table() const override { return param_table(cfg_); }

  // Its parameters (models/param_table.h), before anything is built: the constructor's, on a
  // meta basis (nn::MetaInit); checked arithmetic.
  static ParamTable param_table(const ModelConfig& c);
  // Floats autograd keeps per position for a backward (the memory estimate's activations).
  static int64_t activation_floats_per_position(const ModelConfig& c);

  std::shared_ptr<nn::Embedding> wte;
  std::shared_ptr<nn::Linear> fc, head;

 private:
  Tensor logits_of(const Tensor& ctx) const;  // int64 (..., C) -> (..., V)
  ModelConfig cfg_;
};

}  // namespace ag::models
