// The models `attograd train --model NAME` can build, by name. Add a row to the table in
// registry.cpp to add a model: the trainer, checkpoints and every command then handle it.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/language_model.h"
#include "models/param_table.h"

namespace ag::models {

struct ModelEntry {
  std::string name;     // --model NAME, and ModelConfig::name
  std::string format;   // the "format" of its model.safetensors' __metadata__
  std::string summary;  // one line for help texts
  // The fields of ModelConfig (their keys, e.g. "n_layer") it reads besides vocab_size: the
  // flags `attograd train --model NAME` accepts; checkpoints record all but dropout.
  std::vector<std::string> fields;
  std::function<void(const ModelConfig&)> validate;  // throws std::invalid_argument naming the field
  std::function<std::unique_ptr<LanguageModel>(const ModelConfig&, DType, Generator&)> make;
  // Its parameter table (models/param_table.h) before anything is built, with checked
  // arithmetic: tensor count, shapes, parameter count, init, optimizer groups and FLOPs.
  std::function<ParamTable(const ModelConfig&)> parameters;
  // Floats kept per position for a backward: the activations of the memory estimate.
  std::function<int64_t(const ModelConfig&)> activation_floats_per_position;
  // A TransformerLM's row: its architecture for a configuration (empty for other models).
  std::function<Architecture(const ModelConfig&)> architecture{};

  bool reads(const std::string& field) const;  // one of `fields`
  // Estimated peak bytes of training on batches of `batch` sequences (training), or of a no-grad
  // forward of `batch` sequences (models/model_size.h). Throws std::overflow_error.
  int64_t memory_bytes(const ModelConfig& cfg, int64_t batch, bool training) const;
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
