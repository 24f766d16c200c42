// A character-level GPT trained from C++ with the library alone (no `attograd` program):
// ag::optim::AdamW with nanoGPT's two parameter groups, a warmup-then-cosine schedule from
// ag::optim::lr_scheduler, gradient clipping, an evaluation and a sample.
//
//   char_gpt CORPUS.txt [STEPS]     (default 500 steps; try tinyshakespeare.txt)
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "data/batch.h"
#include "data/corpus.h"
#include "models/transformer_lm.h"
#include "nn/utils/clip_grad.h"
#include "optim/adam.h"
#include "optim/lr_scheduler.h"

using namespace ag;
namespace sch = ag::optim::lr_scheduler;

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: char_gpt CORPUS.txt [STEPS]\n");
    return 2;
  }
  const int64_t steps = argc == 3 ? std::atoll(argv[2]) : 500;
  if (steps < 1) {
    std::fprintf(stderr, "char_gpt: STEPS must be a positive number, got '%s'\n", argv[2]);
    return 2;
  }
  try {
    const int64_t block = 64, batch = 12;
    const data::Corpus corpus = data::load_corpus(argv[1], block);
    Generator gen(1337);
    models::GPTConfig cfg{corpus.tokenizer.vocab_size(), /*n_layer=*/2, /*n_head=*/4, /*n_embd=*/64, block, /*dropout=*/0.0};
    models::TransformerLM model(cfg, DType::Float32, gen);

    // nanoGPT's groups: matrices and embeddings decay, biases and LayerNorm gains do not.
    std::vector<Tensor> decay, no_decay;
    for (const Tensor& p : model.parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
    const optim::AdamWOptions base{.lr = 1e-3, .betas = {0.9, 0.99}, .eps = 1e-8, .weight_decay = 0.1};
    optim::AdamWOptions without = base;
    without.weight_decay = 0.0;
    optim::AdamW opt({{decay, base}, {no_decay, without}});

    // Linear warmup over the first 10% of the steps, then a cosine down to lr/10.
    const int64_t warmup = std::max<int64_t>(1, steps / 10);
    auto warm = std::make_shared<sch::LinearLR>(opt, 0.01, 1.0, warmup);
    auto cosine = std::make_shared<sch::CosineAnnealingLR>(opt, std::max<int64_t>(1, steps - warmup), 1e-4);
    sch::SequentialLR sched(opt, {warm, cosine}, {warmup});

    std::printf("%ld parameters, %ld training characters\n", static_cast<long>(model.num_parameters()),
                static_cast<long>(corpus.train_ids.size()));
    for (int64_t step = 0; step < steps; ++step) {
      auto [x, y] = data::get_batch(corpus.train_ids, batch, block, gen);
      opt.zero_grad();
      Tensor loss = model.loss(x, y);
      loss.backward();
      const double norm = nn::utils::clip_grad_norm_(model.parameters(), 1.0);
      opt.step();
      sched.step();
      if (step % 50 == 0 || step == steps - 1)
        std::printf("step %5ld  loss %.4f  grad norm %.3f  lr %.2e\n", static_cast<long>(step), loss.item(), norm,
                    sched.get_last_lr()[0]);
    }

    model.eval();
    double val = 0;
    {
      NoGradGuard no_grad;
      Generator eval_gen(7);
      for (int i = 0; i < 10; ++i) {
        auto [x, y] = data::get_batch(corpus.val_ids, batch, block, eval_gen);
        val += model.loss(x, y).item() / 10;
      }
    }
    std::printf("validation loss %.4f\n", val);
    const auto ids = model.generate({corpus.train_ids[0]}, {.max_new_tokens = 200, .temperature = 0.8}, gen);
    std::printf("sample:\n%s\n", corpus.tokenizer.decode(ids).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "char_gpt: %s\n", e.what());
    return 1;
  }
  return 0;
}
