// attograd.models' engines: the language models of the registry (models/registry.h) and their
// character tokenizer, loaded from a run folder or model.safetensors (train/run_folder/checkpoint.h)
// or made afresh. python/attograd/models/ wraps a model as an nn.Module (its parameters the C++
// model's own tensors). A model's forward, loss and generation run with the GIL released.
#include <nanobind/stl/map.h>

#include "autograd/random.h"
#include "common.h"
#include "data/tokenizer.h"
#include "gil.h"
#include "models/language_model.h"
#include "models/registry.h"
#include "train/run_folder/checkpoint.h"

namespace agpy {

namespace {

using ag::Tensor;
namespace models = ag::models;

nb::dict config_dict(const models::ModelConfig& c) {
  nb::dict d;
  models::visit_model_fields(c, [&](const auto& v, const char* key, const char*) { d[key] = v; });
  d["vocab_size"] = c.vocab_size;
  return d;
}

models::ModelConfig config_from(nb::dict d) {
  models::ModelConfig c;
  models::visit_model_fields(c, [&](auto& v, const char* key, const char*) {
    if (d.contains(key)) v = nb::cast<std::remove_reference_t<decltype(v)>>(d[key]);
  });
  if (d.contains("vocab_size")) c.vocab_size = nb::cast<int64_t>(d["vocab_size"]);
  for (auto [k, v] : d) {
    const std::string key = nb::cast<std::string>(k);
    bool known = key == "vocab_size";
    models::visit_model_fields(c, [&](const auto&, const char* name, const char*) { known = known || key == name; });
    if (!known) throw ag::ValueError("unknown model setting '" + key + "'");
  }
  return c;
}

}  // namespace

void bind_models(nb::module_& m) {
  nb::class_<ag::data::CharTokenizer>(m, "_CharTokenizer")
      .def_static("from_chars", &ag::data::CharTokenizer::from_chars, nb::arg("chars"))
      .def_static("from_text", [](const std::string& text) {
        return ag::data::CharTokenizer::from_text(ag::data::decode_utf8(text, "text"));
      }, nb::arg("text"))
      .def("encode", [](const ag::data::CharTokenizer& t, const std::string& text) { return t.encode(std::string_view(text)); },
           nb::arg("text"))
      .def("decode", [](const ag::data::CharTokenizer& t, const std::vector<int64_t>& ids) { return t.decode(ids); },
           nb::arg("ids"))
      .def("chars", &ag::data::CharTokenizer::chars)
      .def_prop_ro("vocab_size", &ag::data::CharTokenizer::vocab_size);

  nb::class_<models::LanguageModel, ag::nn::Module>(m, "_LanguageModel")
      .def("forward", [](const models::LanguageModel& lm, const Tensor& idx) {
        nb::gil_scoped_release release;
        return lm.forward(idx);
      }, nb::arg("idx"))
      .def("loss", [](const models::LanguageModel& lm, const Tensor& idx, const Tensor& targets) {
        nb::gil_scoped_release release;
        return lm.loss(idx, targets);
      }, nb::arg("idx"), nb::arg("targets"))
      .def("generate", [](const models::LanguageModel& lm, const std::vector<int64_t>& prompt, int64_t max_new_tokens,
                          double temperature, int64_t top_k, uint64_t seed) {
        nb::gil_scoped_release release;
        ag::Generator gen(seed);
        models::SampleOptions opt;
        opt.max_new_tokens = max_new_tokens, opt.temperature = temperature, opt.top_k = top_k;
        return lm.generate(prompt, opt, gen);
      }, nb::arg("prompt"), nb::arg("max_new_tokens"), nb::arg("temperature"), nb::arg("top_k"), nb::arg("seed"))
      .def("model_config", [](const models::LanguageModel& lm) { return config_dict(lm.model_config()); })
      .def("summary", &models::LanguageModel::summary)
      .def("has_attention", [](const models::LanguageModel& lm) { return lm.attention() != nullptr; })
      .def("num_parameters", &models::LanguageModel::num_parameters)
      .def("forward_flops", &models::LanguageModel::forward_flops, nb::arg("batch"));

  m.def("_model_names", [] {
    std::vector<std::string> names;
    for (const models::ModelEntry& e : models::model_registry()) names.push_back(e.name);
    return names;
  });
  m.def("_make_model", [](nb::dict config, std::optional<ag::DType> dtype, std::optional<uint64_t> seed) {
    const models::ModelConfig c = config_from(config);
    const ag::DType d = dtype ? *dtype : default_dtype();
    std::shared_ptr<models::LanguageModel> lm;
    try {
      if (seed) {
        ag::Generator gen(*seed);
        lm = models::make_model(c, d, gen);
      } else {
        lm = models::make_model(c, d);
      }
    } catch (const ag::ValueError&) {
      throw;
    } catch (const std::invalid_argument& e) {
      throw ag::ValueError(e.what());  // a bad setting, named by the registry
    }
    return lm;
  }, nb::arg("config"), nb::arg("dtype").none() = nb::none(), nb::arg("seed").none() = nb::none());
  m.def("_load_model", [](const std::string& path) {
    ag::train::LoadedModel loaded;
    {
      nb::gil_scoped_release release;
      loaded = ag::train::load_model(path);
    }
    std::shared_ptr<models::LanguageModel> lm = std::move(loaded.model);
    return nb::make_tuple(lm, loaded.tokenizer, loaded.path);
  }, nb::arg("path"));
  m.def("_save_model", [](const std::string& path, const models::LanguageModel& lm, const ag::data::CharTokenizer& tok) {
    nb::gil_scoped_release release;
    ag::train::save_model(path, lm, tok);
  }, nb::arg("path"), nb::arg("model"), nb::arg("tokenizer"));
}

}  // namespace agpy
