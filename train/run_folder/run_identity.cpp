#include "train/run_folder/run_identity.h"

#include <filesystem>
#include <random>
#include <stdexcept>

#include "base/atomic_file.h"
#include "base/input_file.h"

namespace ag::train {

namespace {
bool is_run_id(const std::string& s) {
  if (s.size() != 32) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}
std::string file_of(const std::string& dir) { return (std::filesystem::path(dir) / kRunIdFile).string(); }
}  // namespace

std::string new_run_id() {
  std::random_device rd;  // the system's entropy: the run's seeded generators are left alone
  static const char hex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 4; ++i) {
    uint32_t x = rd();
    for (int k = 0; k < 8; ++k, x >>= 4) id += hex[x & 15];
  }
  return id;
}

void write_run_id(const std::string& dir, const std::string& id) { write_file_atomically(file_of(dir), id + "\n"); }

std::string read_run_id(const std::string& dir) {
  const std::string path = file_of(dir);
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return "";
  std::string text = read_input_file({path, path, 1024, "a run_id file is one line of 32 hex digits", ""});
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!is_run_id(text)) throw std::runtime_error(path + ": not a run identity (one line of 32 hex digits)");
  return text;
}

void check_run_identity(const std::string& dir, const std::string& folder_id, const std::string& state_id,
                        const std::string& state_path) {
  if (folder_id == state_id) return;
  const std::string advice =
      ": resuming it here would continue that other run in this folder and mix the two runs' metrics. Resume the "
      "run's own folder (to move a run, copy its whole folder), or start a new run from its weights with --init-from";
  if (folder_id.empty())
    throw std::runtime_error(state_path + " is the checkpoint of run " + state_id + ", but " + dir +
                             " has no run_id file: the state was copied from another run's folder" + advice);
  if (state_id.empty())
    throw std::runtime_error(state_path + " carries no run identity, but " + dir + " is run " + folder_id + " (" +
                             file_of(dir) + "): the state comes from another run" + advice);
  throw std::runtime_error(state_path + " is the checkpoint of run " + state_id + ", not of run " + folder_id +
                           ", which " + dir + " holds (" + file_of(dir) + ")" + advice);
}

}  // namespace ag::train
