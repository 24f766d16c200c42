// A checkpoint's metadata, sealed: a format version and a checksum over every other
// __metadata__ entry. Some of that metadata appears in no tensor shape (n_head, the
// vocabulary's order, a train state's learning rate), so editing it by hand or a damaged copy
// would load silently and give other numbers; the checksum catches it.
//
//   format_version  "2" (files written before the seal existed have none: version 1)
//   checksum        "fnv1a64:<16 hex digits>" of the entries sorted by key, each key and
//                   value followed by a NUL byte, without the checksum entry itself
//
// The checksum guards against mistakes and damage, not against an attacker, who can recompute it.
#pragma once
#include <map>
#include <string>

#include "autograd/safetensors.h"

namespace ag::train {

constexpr int kFormatVersion = 2;

// The checksum of metadata (its "checksum" entry, if any, left out).
std::string metadata_checksum(const std::map<std::string, std::string>& metadata);

// Adds format_version and checksum to metadata.
void seal_metadata(std::map<std::string, std::string>& metadata);

// Checks the seal of a file's metadata: a version-1 file (no format_version) has none and is
// accepted; otherwise the version must be one this build reads and the checksum must match.
// Throws std::runtime_error naming the file.
void check_metadata_seal(const SafeTensorsFile& f);

}  // namespace ag::train
