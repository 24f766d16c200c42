// docs/architecture.md, "A new model": a bigram language model (each character predicts the
// next from one row of a table of logits, makemore's first model), from its parameter table to
// a trained step. To offer it as `attograd train --model bigram`, add bigram_entry()'s row to
// model_registry() in models/registry.cpp; the trainer, checkpoints, sample and eval then
// handle it.
#include <gtest/gtest.h>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "models/registry.h"
#include "nn/embedding.h"
#include "optim/adam.h"
#include "train/step.h"

namespace ag::example {

class Bigram : public models::LanguageModel {
 public:
  // Every parameter is a row of the table; the modules' own init is replaced by the table's.
  static models::ParamTable param_table(const models::ModelConfig& c) {
    models::ParamTable t;
    //         name             shape                         init                         optimizer group           matmul uses
    t.first = {{"logits.weight", {c.vocab_size, c.vocab_size}, models::Init::normal(0.02), models::OptimGroup::Decay, 0}};
    return t;  // a lookup, no matmul: forward_flops is 0
  }

  Bigram(const models::ModelConfig& c, DType dtype, Generator& gen) : cfg_(c) {
    Generator scratch(0);  // the module's default init draws from here; the table's from gen
    logits = register_module("logits", std::make_shared<nn::Embedding>(c.vocab_size, c.vocab_size, dtype, scratch));
    models::init_parameters(*this, param_table(c), gen);  // checks names and shapes against the table
  }

  Tensor forward(const Tensor& idx) const override { return logits->forward(idx); }  // (B, T) -> (B, T, V)
  Tensor loss(const Tensor& idx, const Tensor& targets) const override {
    const int64_t BT = idx.numel();
    return cross_entropy(reshape(forward(idx), {BT, cfg_.vocab_size}), reshape(targets, {BT}));
  }
  std::vector<int64_t> generate(const std::vector<int64_t>& prompt, const models::SampleOptions& opt,
                                Generator& gen) const override {
    models::check_prompt(prompt, cfg_.vocab_size);
    NoGradGuard no_grad;
    std::vector<int64_t> seq = prompt;
    for (int64_t n = 0; n < opt.max_new_tokens; ++n) {
      const auto row = forward(Tensor::from_vector(std::vector<int64_t>{seq.back()}, {1, 1})).to_double_vector();  // (V)
      seq.push_back(models::sample_token(row, opt.temperature, opt.top_k, gen));
      if (opt.on_token && !opt.on_token(seq.back())) break;
    }
    return seq;
  }
  models::ModelConfig model_config() const override { return cfg_; }
  std::string summary() const override { return "bigram over " + std::to_string(cfg_.vocab_size) + " characters"; }
  models::ParamTable parameter_table() const override { return param_table(cfg_); }

  std::shared_ptr<nn::Embedding> logits;

 private:
  models::ModelConfig cfg_;
};

// Its row of the registry: --model bigram reads no field of its own besides vocab_size and
// block_size (the training window).
models::ModelEntry bigram_entry() {
  return {"bigram",
          "example.Bigram",
          "a bigram table of logits (tests/architecture/new_model.cpp)",
          {"block_size"},
          [](const models::ModelConfig& c) {
            if (c.vocab_size <= 0 || c.block_size <= 0) throw std::invalid_argument("bigram: sizes must be positive");
          },
          [](const models::ModelConfig& c, DType dtype, Generator& gen) -> std::unique_ptr<models::LanguageModel> {
            return std::make_unique<Bigram>(c, dtype, gen);
          },
          Bigram::param_table,
          [](const models::ModelConfig& c) { return 2 * c.vocab_size; }};  // logits and log-softmax per position
}

TEST(ArchitectureExample, ANewModelIsItsTableAndTrainsThroughTheStep) {
  models::ModelConfig c;
  c.name = "bigram";
  c.vocab_size = 5;
  c.block_size = 8;
  const models::ModelEntry entry = bigram_entry();
  entry.validate(c);
  Generator gen(1);
  const auto model = entry.make(c, DType::Float32, gen);
  EXPECT_EQ(model->num_parameters(), entry.parameters(c).num_parameters());
  EXPECT_EQ(model->forward_flops(4), 0.0);
  EXPECT_GT(entry.memory_bytes(c, 4, /*training=*/true), 16 * 25);
  // "abcdeabcde...": every character predicts the next exactly; the step learns it.
  std::vector<int64_t> x_ids, y_ids;
  for (int64_t i = 0; i < 4 * 8; ++i) x_ids.push_back(i % 5), y_ids.push_back((i + 1) % 5);
  const Tensor x = Tensor::from_vector(x_ids, {4, 8}), y = Tensor::from_vector(y_ids, {4, 8});
  optim::AdamW opt(model->parameters(), {.lr = 0.1});
  train::Step step(*model, opt, distributed::Comm::single(), {});
  const double first = step.run(x, y, 0).loss;
  double last = first;
  for (int64_t it = 1; it < 50; ++it) last = step.run(x, y, it).loss;
  EXPECT_LT(last, 0.1 * first);
  EXPECT_EQ(model->generate({0}, {4, 0.0, 0, true}, gen), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

}  // namespace ag::example
