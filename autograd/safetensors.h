// Reading and writing the safetensors checkpoint format.
//
// Layout: 8 bytes N (u64, little-endian), N bytes of UTF-8 JSON, then the data buffer.
//   {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// Offsets are byte offsets into the buffer (end exclusive); data is little-endian, row-major.
//
// Two layers:
//  - SafeTensorsFile: the raw, validated view of a file (any of the 13 safetensors dtypes).
//    parse() checks the whole header against the file size before anything else may be
//    allocated from it, so a hostile header cannot make us allocate more than the file holds.
//  - get()/load_safetensors()/save_safetensors(): conversion to and from attograd Tensors
//    (F32, F64, I64 and BOOL, the dtypes attograd has).
//
// Every reader error is a std::runtime_error whose message starts with the file name. Text
// quoted from the file (names, dtypes, the parser's complaint) is cut to a short prefix, and
// JSON nested deeper than a header needs is refused before it is parsed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/tensor.h"

namespace ag {

// One header entry, as validated by SafeTensorsFile::parse.
struct SafeTensorInfo {
  std::string dtype;           // "F32", "BOOL", ...
  std::vector<int64_t> shape;  // empty for a 0-d tensor
  uint64_t begin = 0;          // byte offsets into the data buffer, end exclusive
  uint64_t end = 0;
};

// Bytes per element of a safetensors dtype name ("F32" -> 4), or 0 for an unknown name.
size_t safetensors_dtype_size(std::string_view dtype);

class SafeTensorsFile {
 public:
  // Reads and validates a whole file. Throws std::runtime_error("<path>: <problem>").
  static SafeTensorsFile load(const std::string& path);
  // Validates the bytes of a file; name_for_errors starts every error message.
  static SafeTensorsFile parse(std::string bytes, const std::string& name_for_errors);

  const std::string& source() const { return source_; }  // the path or name given
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::vector<std::string> names() const;  // sorted
  size_t size() const { return tensors_.size(); }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const SafeTensorInfo& info(const std::string& name) const;  // throws for an unknown name
  // The tensor's raw little-endian bytes, inside this object (valid while it lives).
  // Not necessarily aligned for the element type: copy out with memcpy.
  std::span<const uint8_t> bytes(const std::string& name) const;

  // A fresh contiguous Tensor with the tensor's values: F32 -> Float32, F64 -> Float64,
  // I64 -> Int64, BOOL -> Bool; other dtypes throw "unsupported dtype for attograd".
  Tensor get(const std::string& name) const;

 private:
  SafeTensorsFile() = default;

  std::string source_;
  std::string file_;          // the whole file
  uint64_t data_start_ = 0;   // 8 + N: where the buffer starts in file_
  std::map<std::string, SafeTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Loads every tensor of a file (validated first; see SafeTensorsFile).
std::map<std::string, Tensor> load_safetensors(const std::string& path);

// The bytes of a safetensors file holding these tensors: sorted by name in both header and
// buffer, header padded with spaces to a multiple of 8 so the buffer starts 8-aligned.
// Throws std::invalid_argument for duplicate names, the reserved name "__metadata__",
// undefined tensors, or names/metadata that are not valid UTF-8.
std::string serialize_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});

// Writes serialize_safetensors(...) durably with write_file_atomically (base/atomic_file.h):
// to "<path>.tmp.<pid>" in the same folder, then fsync, rename over path, fsync the folder. On failure the temporary file is removed, path
// is left as it was, and std::runtime_error (or std::invalid_argument, see above) names the path.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace ag
