// The models `attograd train --model NAME` can build, by name. Add a row to the table in
// registry.cpp to add a model: the trainer, checkpoints and every command then handle it.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/language_model.h"

namespace ag::models {

struct ModelEntry {
  std::string name;     // --model NAME, and ModelConfig::name
  std::string format;   // the "format" of its model.safetensors' __metadata__
  std::string summary;  // one line for help texts
  // The integer fields of ModelConfig (their keys, e.g. "n_layer") it reads besides vocab_size;
  // checkpoints record them.
  std::vector<std::string> fields;
  std::function<void(const ModelConfig&)> validate;  // throws std::invalid_argument naming the field
  std::function<std::unique_ptr<LanguageModel>(const ModelConfig&, DType, Generator&)> make;
};

const std::vector<ModelEntry>& model_registry();
// Throw std::invalid_argument listing the known names / formats.
const ModelEntry& find_model(const std::string& name);
const ModelEntry& find_model_by_format(const std::string& format);
// "gpt, mlp"
std::string model_names();

// find_model(cfg.name).validate(cfg), then make(cfg, dtype, gen).
std::unique_ptr<LanguageModel> make_model(const ModelConfig& cfg, DType dtype = DType::Float32,
                                          Generator& gen = default_generator());

}  // namespace ag::models
