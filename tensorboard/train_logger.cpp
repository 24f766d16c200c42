#include "tensorboard/train_logger.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <stdexcept>

#include "train/trainer.h"
#include "viz/attention_maps.h"

namespace ag::tensorboard {

namespace {
constexpr int kHistogramBins = 30;
constexpr int64_t kPromptChars = 24;  // × kAttentionCell pixels a head: a layer of 4 heads is ~1000 wide
constexpr int kAttentionCell = 10;    // pixels a cell: large enough for the character labels

// TensorBoard's text dashboard reads Markdown: indenting every line by 4 spaces makes the
// sample a code block, shown verbatim with its line breaks.
std::string as_code_block(const std::string& text) {
  std::string md = "    ";
  for (char c : text) {
    md += c;
    if (c == '\n') md += "    ";
  }
  return md;
}
}  // namespace

const std::string& TrainLogger::path() const {
  if (!writer_) throw std::logic_error("TrainLogger::path: the run has not started");
  return writer_->path();
}

TrainLogger::TrainLogger(std::string dir, std::ostream* out, int64_t sample_chars)
    : dir_(std::move(dir)), out_(out), sample_chars_(sample_chars) {}

void TrainLogger::on_start(const train::RunStart& e) {
  const data::Corpus& corpus = e.corpus;
  const models::LanguageModel& model = e.model;
  writer_ = std::make_unique<EventWriter>(dir_);
  if (e.start_iter > 0) writer_->add_session_start(e.start_iter);
  writer_->flush();
  seed_ = e.cfg.seed;
  tokenizer_ = &corpus.tokenizer;
  const int64_t n = std::min<int64_t>({kPromptChars, model.block_size(), static_cast<int64_t>(corpus.val_ids.size())});
  prompt_ = corpus.tokenizer.decode(std::span<const int64_t>(corpus.val_ids.data(), static_cast<size_t>(n)));
  newline_id_ = std::max<int64_t>(0, corpus.tokenizer.id_of(U'\n'));
  if (out_) {
    *out_ << "tensorboard: " << writer_->path() << "; view it with: tensorboard --logdir " << dir_ << "\n";
    out_->flush();
  }
}

void TrainLogger::on_step(const train::StepEnd& s) {
  if (!s.logged) return;
  writer_->add_scalar("loss/train_batch", s.loss, s.iter);
  writer_->add_scalar("lr", s.lr, s.iter);
  writer_->add_scalar("grad_norm", s.grad_norm, s.iter);
  writer_->add_scalar("throughput/tokens_per_s", s.tokens_per_s, s.iter);
  writer_->add_scalar("throughput/ms_per_step", s.ms_per_step, s.iter);
  writer_->add_scalar("throughput/mfu", s.mfu, s.iter);
  writer_->flush();
}

void TrainLogger::on_eval(const train::EvalEnd& s) {
  const models::LanguageModel& model = s.model;
  writer_->add_scalar("loss/train", s.train_loss, s.iter);
  writer_->add_scalar("loss/val", s.val_loss, s.iter);
  for (const auto& [name, p] : model.named_parameters()) {
    writer_->add_histogram("weights/" + name, make_histogram(p.to_double_vector(), kHistogramBins), s.iter);
    const Tensor g = p.grad();
    if (g.defined()) writer_->add_histogram("grads/" + name, make_histogram(g.to_double_vector(), kHistogramBins), s.iter);
  }
  const viz::AttentionMaps maps = model.attention() ? viz::capture_attention(model, *tokenizer_, prompt_) : viz::AttentionMaps{};
  for (size_t l = 0; l < maps.layers.size(); ++l) {
    const viz::Image img = viz::render_attention_layer(maps, static_cast<int64_t>(l), kAttentionCell);
    writer_->add_image("attention/layer" + std::to_string(l), img.encode_png(), img.width(), img.height(), s.iter);
  }
  Generator gen(seed_);  // the same seed each time: the samples differ only by the training
  const auto ids = model.generate({newline_id_}, {sample_chars_, 0.8, 0, true}, gen);
  const std::span<const int64_t> generated(ids.data() + 1, ids.size() - 1);  // after the prompt's newline
  writer_->add_text("sample", as_code_block(tokenizer_->decode(generated)), s.iter);
  writer_->flush();
}

}  // namespace ag::tensorboard
