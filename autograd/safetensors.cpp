#include "autograd/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/input_file.h"
#include "base/memory_limit.h"
#include "base/short_quote.h"

namespace ag {

// The buffer is little-endian and we memcpy it straight into tensors.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

using json = nlohmann::json;

// The reference reader's limit: a larger header is refused before it is even parsed.
constexpr uint64_t kMaxHeaderSize = 100'000'000;
// A safetensors header nests three deep ({name: {"shape": [...]}}). nlohmann builds and frees
// nested values recursively, so 100,000 nested '[' would overflow the stack: deeper
// headers are refused by a scan before the parser sees them.
constexpr int kMaxJsonDepth = 16;

struct DTypeEntry {
  std::string_view name;
  size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"I16", 2}, {"U16", 2}, {"F16", 2}, {"BF16", 2},
    {"I32", 4},  {"U32", 4}, {"F32", 4}, {"F64", 8}, {"I64", 8}, {"U64", 8},
};

const char* safetensors_name(DType t) {
  switch (t) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Int64: return "I64";
    case DType::Bool: return "BOOL";
  }
  throw std::logic_error("safetensors: unknown attograd dtype");
}

[[noreturn]] void fail(const std::string& source, const std::string& problem) {
  throw std::runtime_error(source + ": " + problem);
}

std::string offsets_str(uint64_t begin, uint64_t end) {
  // Appended piece by piece: "[" + std::to_string(...) trips a false -Wrestrict in GCC 12 at -O3.
  std::string out = "[";
  out += std::to_string(begin);
  out += ", ";
  out += std::to_string(end);
  out += "]";
  return out;
}

uint64_t read_u64_le(const char* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, 8);  // host is little-endian (static_assert above)
  return v;
}

// Index of the first byte that breaks UTF-8 (overlong forms, surrogates and code points
// above U+10FFFF included), or npos when the whole text is valid.
size_t first_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (s.size() - i < len) return i;
    for (size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

// The first header byte at which arrays and objects nest deeper than kMaxJsonDepth, or npos.
// Brackets inside strings do not count; the text is not otherwise validated here.
size_t first_too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // skip the escaped character
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

// Parses the header JSON. nlohmann keeps the last of duplicate keys silently; a file naming
// a tensor twice is ambiguous, so duplicates (at any depth) are refused here.
json parse_header_json(std::string_view text, const std::string& source) {
  // nlohmann stops at a NUL byte as if the input ended there, so "{}\0<anything>" would pass.
  // NUL is never valid JSON (not whitespace, and escaped inside strings): refuse it.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    fail(source, "header is not valid JSON: NUL byte at header byte " + std::to_string(nul));
  if (const size_t deep = first_too_deep(text); deep != std::string_view::npos)
    fail(source, "header JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels (at header byte " +
                     std::to_string(deep) + "); a safetensors header needs 3");
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto on_event = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty() && duplicate.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) duplicate = key;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text.begin(), text.end(), on_event);
  } catch (const json::exception& e) {
    // nlohmann quotes the text it choked on: keep the message one short line.
    fail(source, "header is not valid JSON: " + short_quote(e.what(), 200));
  }
  if (!duplicate.empty()) fail(source, "header JSON has a duplicate key '" + short_quote(duplicate) + "'");
  if (!j.is_object()) fail(source, std::string("header JSON is not an object but ") + j.type_name());
  return j;
}

// Validates one header entry on its own: JSON types, dtype, shape, and that its byte range
// lies inside the buffer and matches dtype size x element count. After this, allocating
// end - begin bytes for it is bounded by the file size.
SafeTensorInfo parse_entry(const std::string& source, const std::string& name, const json& v,
                           uint64_t buffer_size) {
  const std::string where = "tensor '" + short_quote(name) + "': ";
  if (!v.is_object()) fail(source, where + "header entry is not a JSON object but " + v.type_name());
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) fail(source, where + "header entry is missing \"" + key + "\"");

  SafeTensorInfo info;
  const json& dtype = v["dtype"];
  if (!dtype.is_string()) fail(source, where + "\"dtype\" is not a JSON string but " + dtype.type_name());
  info.dtype = dtype.get<std::string>();
  const size_t elem_size = safetensors_dtype_size(info.dtype);
  if (elem_size == 0) fail(source, where + "unknown dtype \"" + short_quote(info.dtype) + "\"");

  const json& shape = v["shape"];
  if (!shape.is_array()) fail(source, where + "\"shape\" is not a JSON array but " + shape.type_name());
  for (const json& d : shape) {
    if (!d.is_number_integer()) fail(source, where + "\"shape\" holds a non-integer " + short_quote(d.dump()));
    if (d.is_number_unsigned()) {
      const auto u = d.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(source, where + "shape dimension " + d.dump() + " is too large (element count overflow)");
      info.shape.push_back(static_cast<int64_t>(u));
    } else {
      const auto s = d.get<int64_t>();
      if (s < 0) fail(source, where + "negative shape dimension " + d.dump());
      info.shape.push_back(s);
    }
  }

  const json& offsets = v["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    fail(source, where + "\"data_offsets\" is not a JSON array of two integers: " + short_quote(offsets.dump()));
  for (const json& o : offsets)
    if (!o.is_number_unsigned())
      fail(source, where + "\"data_offsets\" holds " + short_quote(o.dump()) + ", not a non-negative integer");
  info.begin = offsets[0].get<uint64_t>();
  info.end = offsets[1].get<uint64_t>();
  const std::string range = offsets_str(info.begin, info.end);
  if (info.end < info.begin) fail(source, where + "data_offsets " + range + " end before they begin (end < begin)");
  if (info.end > buffer_size)
    fail(source, where + "data_offsets " + range + " run out of range: the data buffer holds only " +
                     std::to_string(buffer_size) + " bytes (file truncated?)");

  // Element count and byte size, refusing products that wrap around.
  uint64_t count = 1;
  for (int64_t d : info.shape)
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count))
      fail(source, where + "element count overflow for its shape");
  if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail(source, where + "element count overflow for its shape");
  // With a 0 dim the count is 0 whatever the others are, but strides multiply the others
  // too (e.g. [0, 2^40, 2^40]): those must fit int64 as well.
  uint64_t nonzero_product = 1;
  for (int64_t d : info.shape)
    if (d != 0 && (__builtin_mul_overflow(nonzero_product, static_cast<uint64_t>(d), &nonzero_product) ||
                   nonzero_product > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))
      fail(source, where + "element count overflow: the strides of its shape do not fit 64 bits");
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(count, static_cast<uint64_t>(elem_size), &nbytes))
    fail(source, where + "element count overflow: byte size does not fit 64 bits");
  if (info.end - info.begin != nbytes)
    fail(source, where + "byte size mismatch: data_offsets " + range + " span " + std::to_string(info.end - info.begin) +
                     " bytes but " + info.dtype + " x " + std::to_string(count) + " elements need " +
                     std::to_string(nbytes));
  return info;
}

std::string serialize_impl(const std::vector<std::pair<std::string, Tensor>>& tensors,
                           const std::map<std::string, std::string>& metadata, const std::string& context) {
  auto bad = [&](const std::string& problem) { throw std::invalid_argument(context + ": " + problem); };

  // Sort by name (the buffer follows the same order) and refuse ambiguous names.
  std::vector<const std::pair<std::string, Tensor>*> order;
  order.reserve(tensors.size());
  for (const auto& entry : tensors) order.push_back(&entry);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  for (size_t i = 0; i < order.size(); ++i) {
    const std::string& name = order[i]->first;
    if (i > 0 && order[i - 1]->first == name) bad("duplicate tensor name '" + name + "'");
    if (name == "__metadata__") bad("'__metadata__' is reserved and cannot name a tensor");
    if (!order[i]->second.defined()) bad("tensor '" + name + "' is undefined");
  }

  // ordered_json keeps insertion order: metadata first, then the tensors by name.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    auto& meta = header["__metadata__"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
  }
  std::vector<Tensor> data;  // contiguous copies (or the tensors themselves), in buffer order
  data.reserve(order.size());
  uint64_t offset = 0;
  for (const auto* entry : order) {
    // detach: reading values for a file must not record anything in the autograd graph.
    Tensor t = entry->second.detach().contiguous();
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    auto& e = header[entry->first] = nlohmann::ordered_json::object();
    e["dtype"] = safetensors_name(t.dtype());
    e["shape"] = nlohmann::ordered_json::array();
    for (int64_t d : t.shape()) e["shape"].push_back(d);
    e["data_offsets"] = {offset, offset + nbytes};
    offset += nbytes;
    data.push_back(std::move(t));
  }

  std::string text;
  try {
    text = header.dump();  // compact; throws on names or metadata that are not valid UTF-8
  } catch (const nlohmann::ordered_json::exception& e) {
    bad(std::string("a tensor name or metadata string is not valid UTF-8: ") + e.what());
  }
  // Pad with spaces (valid JSON whitespace) so the buffer starts at a multiple of 8.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + text.size() + offset);
  const uint64_t n = text.size();
  char size_bytes[8];
  std::memcpy(size_bytes, &n, 8);  // little-endian host
  out.append(size_bytes, 8);
  out.append(text);
  for (const Tensor& t : data) {
    const size_t nbytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    if (nbytes > 0) out.append(static_cast<const char*>(t.raw_data()), nbytes);
  }
  return out;
}

}  // namespace

size_t safetensors_dtype_size(std::string_view dtype) {
  for (const auto& d : kDTypes)
    if (d.name == dtype) return d.size;
  return 0;
}

// ---- SafeTensorsFile --------------------------------------------------------------------------

SafeTensorsFile SafeTensorsFile::load(const std::string& path) {
  // The whole file is held in memory, so it may be at most what this process may use; only a
  // regular file is read (a FIFO or /dev/zero would never end).
  const MemoryLimit limit = memory_limit();
  return parse(read_input_file({path, path, limit.bytes, "what this process may use: " + limit.where, ""}), path);
}

SafeTensorsFile SafeTensorsFile::parse(std::string bytes, const std::string& source) {
  const uint64_t file_size = bytes.size();
  if (file_size < 8)
    fail(source, "file is truncated or empty: " + std::to_string(file_size) +
                     " bytes, fewer than the 8 of the header size");
  const uint64_t n = read_u64_le(bytes.data());
  if (n > kMaxHeaderSize)
    fail(source, "header size " + std::to_string(n) + " is too large (limit " + std::to_string(kMaxHeaderSize) + ")");
  if (n > file_size - 8)
    fail(source, "header size " + std::to_string(n) + " runs past the end of the file (" + std::to_string(file_size) +
                     " bytes): file truncated?");

  const std::string_view text(bytes.data() + 8, n);
  if (const size_t bad = first_invalid_utf8(text); bad != std::string_view::npos)
    fail(source, "header is not valid UTF-8 (at header byte " + std::to_string(bad) + ")");
  const json header = parse_header_json(text, source);

  SafeTensorsFile f;
  f.source_ = source;
  f.data_start_ = 8 + n;
  const uint64_t buffer_size = file_size - f.data_start_;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (value.is_null()) continue;  // some writers emit null for "no metadata"
      if (!value.is_object()) fail(source, std::string("__metadata__ is not a JSON object but ") + value.type_name());
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          fail(source, "__metadata__ value for key '" + short_quote(mk) + "' is not a string but " + mv.type_name());
        f.metadata_.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    f.tensors_.emplace(key, parse_entry(source, key, value, buffer_size));
  }

  // The entries, ordered by position, must tile the buffer exactly: no gap, no overlap,
  // nothing after the last one. Ties (empty tensors) are ordered by end, then name.
  std::vector<const std::pair<const std::string, SafeTensorInfo>*> by_offset;
  for (const auto& entry : f.tensors_) by_offset.push_back(&entry);
  std::stable_sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return std::pair(a->second.begin, a->second.end) < std::pair(b->second.begin, b->second.end);
  });
  uint64_t expected = 0;
  const std::string* previous = nullptr;
  for (const auto* entry : by_offset) {
    const SafeTensorInfo& info = entry->second;
    const std::string range = offsets_str(info.begin, info.end);
    if (info.begin > expected)
      fail(source, "gap in the data buffer: bytes " + offsets_str(expected, info.begin) +
                       " belong to no tensor (next is '" + short_quote(entry->first) + "' at " + range + ")");
    if (info.begin < expected)
      fail(source, "tensor '" + short_quote(entry->first) + "' data_offsets " + range + " overlap tensor '" +
                       short_quote(*previous) +
                       "', which ends at " + std::to_string(expected));
    expected = info.end;
    previous = &entry->first;
  }
  // expected <= buffer_size here: each entry was checked to end inside the buffer.
  if (expected != buffer_size)
    fail(source, std::to_string(buffer_size - expected) + " trailing bytes after the last tensor (data ends at " +
                     std::to_string(8 + n + expected) + ", file size is " + std::to_string(file_size) + ")");

  f.file_ = std::move(bytes);
  return f;
}

std::vector<std::string> SafeTensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& entry : tensors_) out.push_back(entry.first);
  return out;
}

const SafeTensorInfo& SafeTensorsFile::info(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end()) fail(source_, "no tensor named '" + short_quote(name) + "'");
  return it->second;
}

std::span<const uint8_t> SafeTensorsFile::bytes(const std::string& name) const {
  const SafeTensorInfo& i = info(name);
  const auto* base = reinterpret_cast<const uint8_t*>(file_.data()) + data_start_;
  return {base + i.begin, static_cast<size_t>(i.end - i.begin)};
}

Tensor SafeTensorsFile::get(const std::string& name) const {
  const SafeTensorInfo& i = info(name);
  DType dtype;
  if (i.dtype == "F32") {
    dtype = DType::Float32;
  } else if (i.dtype == "F64") {
    dtype = DType::Float64;
  } else if (i.dtype == "I64") {
    dtype = DType::Int64;
  } else if (i.dtype == "BOOL") {
    dtype = DType::Bool;
  } else {
    fail(source_, "tensor '" + short_quote(name) + "': unsupported dtype for attograd: " + i.dtype +
                      " (attograd reads F32, F64, I64 and BOOL)");
  }
  const std::span<const uint8_t> src = bytes(name);
  // A bool byte other than 0 or 1 is undefined behaviour once read as a C++ bool.
  if (dtype == DType::Bool)
    for (size_t k = 0; k < src.size(); ++k)
      if (src[k] > 1)
        fail(source_, "tensor '" + short_quote(name) + "': BOOL element " + std::to_string(k) + " holds " +
                          std::to_string(src[k]) + ", not 0 or 1");
  // parse() checked src.size() == element count x dtype size, and that it lies in the file.
  Tensor t = Tensor::empty(i.shape, dtype);
  if (!src.empty()) std::memcpy(t.raw_data(), src.data(), src.size());
  return t;
}

std::map<std::string, Tensor> load_safetensors(const std::string& path) {
  const SafeTensorsFile f = SafeTensorsFile::load(path);
  std::map<std::string, Tensor> out;
  for (const std::string& name : f.names()) out.emplace(name, f.get(name));
  return out;
}

// ---- writer -------------------------------------------------------------------------------------

std::string serialize_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  return serialize_impl(tensors, metadata, "serialize_safetensors");
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Serialize first: a bad argument then fails before the file system is touched.
  const std::string bytes = serialize_impl(tensors, metadata, path + ": cannot save");
  write_file_atomically(path, bytes);
}

}  // namespace ag
