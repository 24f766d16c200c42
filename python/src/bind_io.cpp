// Tensors to and from safetensors files (python/attograd/serialization.py gives them torch's
// save/load names): the file is written atomically, and read through the validating reader.
#include <nanobind/stl/map.h>

#include "autograd/safetensors.h"
#include "common.h"

namespace agpy {

void bind_io(nb::module_& m) {
  m.def("_save_safetensors", [](const std::string& path, const std::vector<std::pair<std::string, ag::Tensor>>& tensors,
                                const std::map<std::string, std::string>& metadata) {
    nb::gil_scoped_release release;
    ag::save_safetensors(path, tensors, metadata);
  }, nb::arg("path"), nb::arg("tensors"), nb::arg("metadata"));
  m.def("_load_safetensors", [](const std::string& path) {
    std::vector<std::pair<std::string, ag::Tensor>> tensors;
    std::map<std::string, std::string> metadata;
    {
      nb::gil_scoped_release release;
      const ag::SafeTensorsFile file = ag::SafeTensorsFile::load(path);
      for (const std::string& name : file.names()) tensors.emplace_back(name, file.get(name));
      metadata = file.metadata();
    }
    return nb::make_tuple(tensors, metadata);
  }, nb::arg("path"));
}

}  // namespace agpy
