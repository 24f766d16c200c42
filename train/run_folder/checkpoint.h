// model.safetensors: a language model's parameters in F32 under their names, with
// __metadata__ holding format (which model: models/registry.h), the integer hyperparameters
// that model reads (for the GPT: n_layer, n_head, n_embd, block_size, as decimal strings) and
// vocab (a JSON array of the characters in id order), so sampling and evaluation need no
// other file. A GPT's tied head is stored once, as tok_emb.weight. Files without a format are
// GPTs. format_version and a checksum of the metadata (train/run_folder/metadata_seal.h) catch an edited
// n_head, which no tensor shape shows; only finite weights are written or read (train/finite.h).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "autograd/safetensors.h"
#include "data/tokenizer.h"
#include "models/language_model.h"

namespace ag::train {

// The format of DIR/train_state.safetensors (train/run_folder/train_state.h): what `--resume` reads. Named
// here too, so that loading one as a model says what it is.
inline constexpr const char* kTrainStateFormat = "attograd.train_state";

struct LoadedModel {
  std::unique_ptr<models::LanguageModel> model;
  data::CharTokenizer tokenizer;
  std::string path;  // the file actually read
};

// Writes durably (temp file, fsync, rename): a crash never leaves a half-written model.
void save_model(const std::string& path, const models::LanguageModel& model, const data::CharTokenizer& tokenizer);

// PATH is a model.safetensors file or a run folder holding one. Every problem (bad file,
// unknown format, missing metadata, missing or extra tensors, wrong shapes, vocab size
// mismatch) throws std::runtime_error naming the file and the problem. The model is returned
// in eval mode.
LoadedModel load_model(const std::string& path);

// Checks, before any model is built, that file f holds exactly the tensors the model cfg
// describes has (its parameter table, models/param_table.h), each F32 and of its shape, under every prefix ("" for a
// model file; "model." for a train state's weights). The count
// is compared first, so a hostile n_layer costs nothing. Throws std::runtime_error naming the file.
void check_tensors_against_config(const SafeTensorsFile& f, const models::ModelConfig& cfg,
                                  const std::vector<std::string>& prefixes);
// The same with the prefixes of each parameter by its name (an old train state of --optimizer
// muon kept Muon's momentum for the matrices and AdamW's moments for the rest); at most
// max_prefixes each. The file may also hold the tensors `also` accepts (a train state's
// optimizer state), which are the caller's to check.
void check_tensors_against_config(const SafeTensorsFile& f, const models::ModelConfig& cfg,
                                  const std::function<std::vector<std::string>(const std::string& name)>& prefixes,
                                  size_t max_prefixes, const std::function<bool(const std::string& name)>& also = {});

// The metadata block of a model file.
std::map<std::string, std::string> model_metadata(const models::LanguageModel& model, const data::CharTokenizer& tokenizer);

}  // namespace ag::train
