// model.safetensors: the TransformerLM's parameters in F32 under their PyTorch-twin names
// (the tied head is stored once, as tok_emb.weight), with __metadata__ holding n_layer,
// n_head, n_embd, block_size (decimal strings) and vocab (a JSON array of the characters in
// id order), so sampling and evaluation need no other file; format_version and a checksum
// of that metadata (train/metadata_seal.h) catch an edited n_head. Only finite weights are
// written or read (train/finite.h).
#pragma once
#include <memory>
#include <string>

#include "autograd/safetensors.h"
#include "data/tokenizer.h"
#include "models/transformer_lm.h"

namespace ag::train {

struct LoadedModel {
  std::unique_ptr<models::TransformerLM> model;
  data::CharTokenizer tokenizer;
  std::string path;  // the file actually read
};

// Writes durably (temp file, fsync, rename): a crash never leaves a half-written model.
void save_model(const std::string& path, const models::TransformerLM& model, const data::CharTokenizer& tokenizer);

// PATH is a model.safetensors file or a run folder holding one. Every problem (bad file,
// missing metadata, missing or extra tensors, wrong shapes, vocab size mismatch) throws
// std::runtime_error naming the file and the problem. The model is returned in eval mode.
LoadedModel load_model(const std::string& path);

// Checks, before any model is built, that file f holds exactly the tensors a GPT with cfg
// has, each F32 and of its shape, under every prefix ("" for a model file; "model.",
// "adam.exp_avg." and "adam.exp_avg_sq." for a train state). The count is compared first, so
// a hostile n_layer costs nothing. Throws std::runtime_error naming the file.
void check_tensors_against_config(const SafeTensorsFile& f, const models::GPTConfig& cfg,
                                  const std::vector<std::string>& prefixes);

// The metadata block of a model file, shared by save_model and the train state.
std::map<std::string, std::string> model_metadata(const models::GPTConfig& cfg, const data::CharTokenizer& tokenizer);

}  // namespace ag::train
