#include "train/run_folder/metadata_seal.h"

#include <cstdio>
#include <stdexcept>

#include "base/short_quote.h"

namespace ag::train {

std::string metadata_checksum(const std::map<std::string, std::string>& metadata) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
  auto feed = [&](const std::string& s) {
    for (const unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0u) * 0x100000001b3ull;  // the NUL after each string keeps "ab","c" apart from "a","bc"
  };
  for (const auto& [k, v] : metadata) {  // std::map: sorted by key
    if (k == "checksum") continue;
    feed(k);
    feed(v);
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void seal_metadata(std::map<std::string, std::string>& metadata) {
  metadata["format_version"] = std::to_string(kFormatVersion);
  metadata["checksum"] = metadata_checksum(metadata);
}

void check_metadata_seal(const SafeTensorsFile& f) {
  const auto& md = f.metadata();
  const auto version = md.find("format_version");
  const auto sum = md.find("checksum");
  if (version == md.end()) {
    if (sum != md.end()) throw std::runtime_error(f.source() + ": __metadata__ has a checksum but no format_version");
    return;  // version 1: written before the seal existed
  }
  if (version->second != std::to_string(kFormatVersion))
    throw std::runtime_error(f.source() + ": format_version \"" + short_quote(version->second) +
                             "\" is not one this attograd reads (" + std::to_string(kFormatVersion) +
                             "); it was written by another version");
  if (sum == md.end()) throw std::runtime_error(f.source() + ": __metadata__ lacks its checksum");
  const std::string want = metadata_checksum(md);
  if (sum->second != want)
    throw std::runtime_error(f.source() + ": __metadata__ checksum mismatch (stored \"" + short_quote(sum->second) +
                             "\", computed \"" + want + "\"): the metadata was edited or damaged");
}

}  // namespace ag::train
