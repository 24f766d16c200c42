// The models `attograd train --model NAME` can build, by name. Add a row to the table in
// registry.cpp to add a model: the trainer, checkpoints and every command then handle it.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/language_model.h"
#include "models/model_size.h"

namespace ag::models {

struct ModelEntry {
  std::string name;     // --model NAME, and ModelConfig::name
  std::string format;   // the "format" of its model.safetensors' __metadata__
  std::string summary;  // one line for help texts
  // The integer and number fields of ModelConfig (their keys, e.g. "n_layer") it reads besides vocab_size;
  // checkpoints record them.
  std::vector<std::string> fields;
  std::function<void(const ModelConfig&)> validate;  // throws std::invalid_argument naming the field
  std::function<std::unique_ptr<LanguageModel>(const ModelConfig&, DType, Generator&)> make;
  // Its sizes before anything is built, with checked arithmetic (models/model_size.h): the
  // tensor count, the parameters as (name, shape), and a memory estimate (batch, training).
  std::function<int64_t(const ModelConfig&)> num_tensors;
  std::function<ParameterShapes(const ModelConfig&)> parameter_shapes;
  std::function<int64_t(const ModelConfig&, int64_t, bool)> memory_bytes;
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
