// Replacing a file so that a crash, a kill or a full disk at any moment leaves either the old
// file or the new one, never a mix: write "<path>.tmp.<pid>" in the same folder, fsync it,
// rename it over path, fsync the folder. Checkpoints and metrics.jsonl are written this way.
//
// A process killed (SIGKILL) between the create and the rename leaves its temporary file
// behind; remove_stale_temporaries() removes those of processes that no longer run.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ag {

// Writes bytes to path as described above. On failure the temporary file is removed, path is
// left as it was, and std::runtime_error names the path and the failed step.
void write_file_atomically(const std::string& path, std::string_view bytes);

// "<path>.tmp.<pid>" for this process: the temporary file write_file_atomically uses.
std::string temporary_path(const std::string& path);

// Removes every "<name>.tmp.<pid>" directly in dir whose pid is not a running process, and
// returns the removed paths. Temporaries of live processes (another run saving right now)
// are left alone. Errors (an unreadable folder) are ignored: this is housekeeping.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

}  // namespace ag
