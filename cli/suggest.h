// "did you mean ...": the closest known name to a mistyped command or flag.
#pragma once
#include <string>
#include <vector>

namespace ag::cli {

// Edit distance: insertions, deletions, substitutions and swaps of two neighbours cost 1
// (optimal string alignment).
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `typed`, if it is close enough to be a plausible typo (at most a
// third of the longer name, and at least 1 edit allowed); "" otherwise.
std::string closest_name(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace ag::cli
