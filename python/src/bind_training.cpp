// Training from Python (python/attograd/training.py): `attograd train` itself, train::train_lm
// and resume_lm (train/trainer.h), run with the GIL released and writing the same run folder.
// The configuration arrives as TOML text made from the keyword arguments, read by the reader of
// `attograd train --config` (train/config/config_file.h), so every key, type and range check is
// the command's. The run's console lines go to Python's sys.stdout (a notebook shows them), a
// line at a time with the GIL taken. A Ctrl-C (a notebook's interrupt) during the run stops it as
// it stops the command: the step ends, a checkpoint is written, and the summary says interrupted;
// the signal stays Python's own throughout (interrupts.h).
#include <filesystem>
#include <ostream>
#include <streambuf>

#include "autograd/errors.h"
#include "common.h"
#include "gil.h"
#include "interrupts.h"
#include "tensorboard/train_logger.h"
#include "train/config/config_error.h"
#include "train/config/config_file.h"
#include "train/config/run_config.h"
#include "train/logging/run_logger.h"
#include "train/trainer.h"

namespace agpy {

namespace {

namespace train = ag::train;

// Whole lines to sys.stdout (or nowhere when quiet), taking the GIL for each.
class PythonLineBuf : public std::streambuf {
 public:
  explicit PythonLineBuf(bool quiet) : quiet_(quiet) {}
  ~PythonLineBuf() override { flush_line(); }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return 0;
    line_.push_back(static_cast<char>(c));
    if (c == '\n' || c == '\r') flush_line();
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) overflow(static_cast<unsigned char>(s[i]));
    return n;
  }
  int sync() override {
    flush_line();
    return 0;
  }

 private:
  void flush_line() {
    if (line_.empty()) return;
    if (!quiet_) {
      nb::gil_scoped_acquire gil;
      try {
        nb::module_ sys = nb::module_::import_("sys");
        nb::object out = sys.attr("stdout");
        out.attr("write")(nb::str(line_.data(), line_.size()));
        out.attr("flush")();
      } catch (nb::python_error& e) {
        // A Ctrl-C while Python wrote the line (a notebook's stdout is Python code) stops the
        // run; std::ostream would swallow it, and the interrupt would be lost.
        if (!stop_run_for(e)) throw;
      }
    }
    line_.clear();
  }
  bool quiet_;
  std::string line_;
};

// on_step(dict) after every step and on_eval(dict) after every evaluation, Python callables
// called with the GIL taken: a notebook's live loss curve. An exception they raise stops the
// run with it, as a logger's failure does.
class PythonLogger : public train::RunLogger {
 public:
  PythonLogger(nb::handle on_step, nb::handle on_eval) : on_step_(ref(on_step)), on_eval_(ref(on_eval)) {}
  void on_step(const train::StepEnd& e) override {
    if (!on_step_) return;
    nb::gil_scoped_acquire gil;
    nb::dict d;
    d["iter"] = e.iter, d["iters"] = e.iters, d["loss"] = e.loss, d["lr"] = e.lr, d["grad_norm"] = e.grad_norm;
    d["tokens_per_s"] = e.tokens_per_s, d["ms_per_step"] = e.ms_per_step, d["elapsed_s"] = e.elapsed_s;
    d["logged"] = e.logged, d["skipped"] = e.skipped;
    call(on_step_, d);
  }
  void on_eval(const train::EvalEnd& e) override {
    if (!on_eval_) return;
    nb::gil_scoped_acquire gil;
    nb::dict d;
    d["iter"] = e.iter, d["train_loss"] = e.train_loss, d["val_loss"] = e.val_loss, d["lr"] = e.lr;
    d["elapsed_s"] = e.elapsed_s;
    call(on_eval_, d);
  }

 private:
  // A KeyboardInterrupt from the callback (Ctrl-C while it ran) stops the run after this step,
  // as a Ctrl-C between steps does; any other exception stops it with that exception.
  static void call(const PyRef& fn, const nb::dict& d) {
    try {
      fn.get()(d);
    } catch (nb::python_error& e) {
      if (!stop_run_for(e)) throw;
    }
  }
  static PyRef ref(nb::handle h) { return h.is_none() ? PyRef() : PyRef(h); }
  PyRef on_step_, on_eval_;
};

nb::dict summary_dict(const train::TrainSummary& s, const std::string& dir) {
  nb::dict d;
  d["out_dir"] = dir;
  d["iters"] = s.iters, d["train_loss"] = s.train_loss, d["val_loss"] = s.val_loss, d["seconds"] = s.seconds;
  d["tokens_per_s"] = s.tokens_per_s, d["skipped_updates"] = s.skipped_updates, d["interrupted"] = s.interrupted;
  d["sample"] = s.sample;
  return d;
}

train::RunHooks hooks_for(const train::TrainConfig& c, const std::string& dir, std::ostream& out, nb::handle on_step,
                          nb::handle on_eval) {
  train::RunHooks hooks;
  if (!on_step.is_none() || !on_eval.is_none()) hooks.loggers.push_back(std::make_shared<PythonLogger>(on_step, on_eval));
  if (c.tensorboard)
    hooks.loggers.push_back(std::make_shared<ag::tensorboard::TrainLogger>((std::filesystem::path(dir) / "tb").string(), &out));
  return hooks;
}

// A configuration that cannot work is a ValueError, with the command's message.
template <class F>
train::TrainSummary config_errors(F&& f) {
  try {
    return f();
  } catch (const train::ConfigError& e) {
    throw ag::ValueError(e.what());
  }
}

std::set<std::string> read_config(const std::string& config_path, const std::string& toml, train::TrainConfig& cfg) {
  std::set<std::string> given;
  try {
    if (!config_path.empty()) given = train::read_config_toml(config_path, cfg);
    for (const std::string& k : train::parse_config_toml(toml, "keyword arguments", cfg)) given.insert(k);
  } catch (const std::runtime_error& e) {
    throw ag::ValueError(e.what());
  }
  return given;
}

}  // namespace

void bind_training(nb::module_& m) {
  install_interrupt_owner();
  // The keys of the run configuration: (flag, member, help, on_resume) in the table's order.
  m.def("_train_fields", [] {
    nb::list out;
    train::TrainConfig c;
    train::visit_fields(c, [&](const auto& value, const train::FieldInfo& info) {
      const char* on_resume = info.on_resume == train::OnResume::Refuse     ? "refuse"
                              : info.on_resume == train::OnResume::Override ? "override"
                                                                             : "fresh";
      out.append(nb::make_tuple(info.flag, info.key, info.help, on_resume, train::format_value(value)));
    });
    return out;
  });
  m.def("_train", [](const std::string& config_path, const std::string& toml, bool quiet, nb::handle on_step,
                     nb::handle on_eval) {
    train::TrainConfig cfg;
    read_config(config_path, toml, cfg);
    RunInterrupts interrupts;
    PythonLineBuf buf(quiet);
    std::ostream out(&buf);
    train::TrainSummary s;
    {
      nb::gil_scoped_release release;
      s = config_errors([&] { return train::train_lm(cfg, out, hooks_for(cfg, cfg.out_dir, out, on_step, on_eval)); });
      out.flush();
    }
    interrupts.finish(s.interrupted);
    return summary_dict(s, cfg.out_dir);
  }, nb::arg("config_path"), nb::arg("toml"), nb::arg("quiet"), nb::arg("on_step").none(), nb::arg("on_eval").none());
  m.def("_resume", [](const std::string& dir, const std::string& toml, bool quiet, nb::handle on_step,
                      nb::handle on_eval) {
    train::TrainConfig now;
    const std::set<std::string> given = read_config("", toml, now);
    RunInterrupts interrupts;
    PythonLineBuf buf(quiet);
    std::ostream out(&buf);
    train::TrainSummary s;
    {
      nb::gil_scoped_release release;
      s = config_errors([&] { return train::resume_lm(dir, now, given, out, hooks_for(now, dir, out, on_step, on_eval)); });
      out.flush();
    }
    interrupts.finish(s.interrupted);
    return summary_dict(s, dir);
  }, nb::arg("dir"), nb::arg("toml"), nb::arg("quiet"), nb::arg("on_step").none(), nb::arg("on_eval").none());
}

}  // namespace agpy
