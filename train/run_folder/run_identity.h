// A run's identity: a random name given when its folder is made, kept in the folder (the file
// run_id) and in every train state it writes (__metadata__ "run_id"). Resuming checks that the
// two agree, so that a train state copied from another run into a folder is refused instead of
// continuing that other run there and mixing the two runs' metrics. A folder made before
// identities has neither and resumes as before; a run copied as a whole folder keeps both.
#pragma once
#include <string>

namespace ag::train {

inline constexpr const char* kRunIdFile = "run_id";

// 32 hex digits from the system's random source (never the run's own generators: the
// training's numbers do not change).
std::string new_run_id();

// DIR/run_id, written atomically (a line: the id).
void write_run_id(const std::string& dir, const std::string& id);
// The id in DIR/run_id, or "" when the folder has none; throws std::runtime_error naming the
// file when it is not one.
std::string read_run_id(const std::string& dir);

// Throws std::runtime_error, naming the folder, the state and both identities, unless the
// folder's id and the state's are equal (both "" for a folder made before identities).
void check_run_identity(const std::string& dir, const std::string& folder_id, const std::string& state_id,
                        const std::string& state_path);

}  // namespace ag::train
