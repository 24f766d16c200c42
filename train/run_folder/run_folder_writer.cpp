#include "train/run_folder/run_folder_writer.h"

#include <filesystem>

#include "base/atomic_file.h"
#include "train/run_folder/checkpoint.h"
#include "train/config/config_file.h"
#include "train/run_folder/train_state.h"

namespace ag::train {

RunFolderWriter::RunFolderWriter(std::string dir) : dir_(std::move(dir)) {}

std::string RunFolderWriter::path(const std::string& name) const { return (std::filesystem::path(dir_) / name).string(); }

void RunFolderWriter::on_start(const RunStart& e) {
  if (!e.resumed) write_config_toml(path("config.toml"), e.cfg);
}

void RunFolderWriter::on_eval(const EvalEnd& e) {
  if (e.grad_report) write_file_atomically(path(e.grad_report->name), e.grad_report->text);
}

void RunFolderWriter::on_checkpoint(const Checkpoint& e) {
  save_train_state(path("train_state.safetensors"), e.cfg, e.model, e.opt, e.pos, e.tokenizer);
  save_model(path("model.safetensors"), e.model, e.tokenizer);
  if (e.best) save_model(path("model.best.safetensors"), e.model, e.tokenizer);
}

}  // namespace ag::train
