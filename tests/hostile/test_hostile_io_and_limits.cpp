// Hardening, round two (one test group per class of failure): every input opened the same
// safe way, deep TOML, symbolic links in a run folder, checked writes, SIGHUP and a closed
// output, OpenBLAS and a small address space, dead ends, values that ask for too much, and
// plots of extreme values. The command-line side is in tests/cli/harden.sh (cli.harden.*),
// the ranks' agreement in tests/cli/mpi_agree.sh (mpi.harden.*); docs/checkpoints.md lists
// which test holds which promise.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "base/atomic_file.h"
#include "autograd/blas_buffers.h"
#include "base/input_file.h"
#include "base/memory_limit.h"
#include "autograd/parallel.h"
#include "autograd/safetensors.h"
#include "data/text_file.h"
#include "models/transformer_lm.h"
#include "cli/harness/attention_probe.h"
#include "tensorboard/event_writer.h"
#include "tensorboard/tfrecord.h"
#include "tests/hostile/harden_util.h"
#include "tests/test_util.h"
#include "train/run_folder/checkpoint.h"
#include "train/config/config_error.h"
#include "train/config/config_file.h"
#include "distributed/comm.h"
#include "train/interrupt.h"
#include "train/memory_check.h"
#include "train/rank_agreement.h"
#include "train/run_folder/run_dir.h"
#include "train/trainer.h"
#include "viz/font.h"
#include "viz/image.h"
#include "viz/line_plot.h"
#include "viz/loss_plot.h"

using namespace ag;
using namespace ag::testing_util;
namespace fs = std::filesystem;

namespace {

// Runs f in a child process, so that a reader that blocks (a FIFO), a crash or a signal fails
// the test instead of hanging or killing the whole test binary. Returns what f returned, or
// "timed out" / "killed by signal N".
std::string in_child(const std::function<std::string()>& f, int seconds = 20) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(static_cast<unsigned>(seconds));
    std::string out;
    try {
      out = f();
    } catch (const std::exception& e) {
      out = std::string("uncaught: ") + e.what();
    }
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    return WTERMSIG(status) == SIGALRM ? "timed out" : "killed by signal " + std::to_string(WTERMSIG(status));
  return out;
}

// The message of the std::runtime_error f throws ("no error" when it returns).
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}


bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

// ---- 1. every input through one function: regular files only, a size cap, the file named ----

TEST(HardenInputFiles, EveryReaderRefusesAFifoADeviceAndADirectory) {
  const fs::path d = temp_dir("harden2_inputs");
  const std::string fifo = (d / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string dir = (d / "folder").string();
  fs::create_directories(dir);
  // Each reader of attograd, as the commands use it.
  const std::vector<std::pair<std::string, std::function<void(const std::string&)>>> readers = {
      {"--config", [](const std::string& p) { train::TrainConfig c; train::read_config_toml(p, c); }},
      {"safetensors (sample --checkpoint, attention --in)", [](const std::string& p) { SafeTensorsFile::load(p); }},
      {"load_model", [](const std::string& p) { train::load_model(p); }},
      {"text (--data, --prompt-file, attend --text-file)", [](const std::string& p) { data::read_text_file(p, p); }},
      {"plot's metrics", [](const std::string& p) { viz::read_metrics(p); }},
      {"event file", [](const std::string& p) { tensorboard::read_records(p); }},
      {"font", [](const std::string& p) { viz::Font f(p); }},
      {"png", [](const std::string& p) { viz::png_dimensions(p); }},
  };
  for (const auto& [name, read] : readers) {
    for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
             {fifo, "is a FIFO (named pipe), not a regular file"},
             {"/dev/zero", "is a character device, not a regular file"},
             {dir, "is a directory, not a regular file"}}) {
      const std::string got = in_child([&, read = read, path = path] { return message_of([&] { read(path); }); });
      EXPECT_TRUE(contains(got, path + ": " + kind) || (name == "load_model" && path == dir && contains(got, "model.safetensors")))
          << name << " on " << path << ": " << got;
    }
  }
}

TEST(HardenInputFiles, SizeCapsAreCheckedBeforeReading) {
  const fs::path d = temp_dir("harden2_caps");
  const fs::path big = d / "big.toml";
  std::ofstream(big) << std::string(train::kMaxConfigBytes + 1, '#');
  train::TrainConfig c;
  const std::string msg = message_of([&] { train::read_config_toml(big.string(), c); });
  EXPECT_TRUE(contains(msg, big.string() + ": is too large: 1048577 bytes, more than the 1048576 allowed")) << msg;
  // A symbolic link to a regular file is followed: inputs may be links.
  std::ofstream(d / "real.toml") << "iters = 7\n";
  fs::create_symlink(d / "real.toml", d / "link.toml");
  train::read_config_toml((d / "link.toml").string(), c);
  EXPECT_EQ(c.iters, 7);
  // The state of a run that is a FIFO is refused by name, never read (resume would block).
  train::TrainConfig cfg = tiny_run(d, "run");
  std::ostringstream out;
  train::train_lm(cfg, out);
  fs::remove(fs::path(cfg.out_dir) / "train_state.safetensors");
  ASSERT_EQ(::mkfifo((fs::path(cfg.out_dir) / "train_state.safetensors").c_str(), 0600), 0);
  const std::string resumed = in_child([&] {
    std::ostringstream o;
    return message_of([&] { train::resume_lm(cfg.out_dir, "", 0, false, o); });
  });
  EXPECT_TRUE(contains(resumed, "train_state.safetensors: is a FIFO (named pipe)")) << resumed;
}

// ---- 2. deep TOML: dotted keys bounded like tables ---------------------------------------------

TEST(HardenToml, DeepDottedKeysAndTablesAreRefusedBeforeParsing) {
  train::TrainConfig c;
  std::string deep;
  for (int i = 0; i < 300000; ++i) deep += "a.";
  deep += "a = 1\n";
  // 300,000 levels overflowed the stack inside toml++ (a crash of the whole process).
  const std::string got = in_child([&] {
    train::TrainConfig cc;
    return message_of([&] { train::parse_config_toml("iters = 3\n" + deep, "deep.toml", cc); });
  });
  EXPECT_TRUE(contains(got, "deep.toml:2: nests deeper than 64 levels")) << got;
  std::string header = "[";
  for (int i = 0; i < 100000; ++i) header += "t.";
  header += "t]\n";
  EXPECT_TRUE(contains(message_of([&] { train::parse_config_toml(header, "h.toml", c); }), "h.toml:1: nests deeper"));
  // Dots inside strings and comments, and floats, are no nesting.
  EXPECT_EQ(train::parse_config_toml("# a.b.c.d\ndata = \"" + std::string(200, '.') + "\"\nlr = 1.5e-3\n", "ok.toml", c),
            (std::set<std::string>{"data", "lr"}));
  // A few dotted levels still parse, and are refused as a nested table, as before.
  EXPECT_TRUE(contains(message_of([&] { train::parse_config_toml("a.b.c = 1\n", "n.toml", c); }), "unknown key 'a'"));
}

// ---- 3. symbolic links in a run folder ------------------------------------------------------------

TEST(HardenRunFolderLinks, ARunFolderWhoseFilesAreLinksIsRefusedByName) {
  const fs::path d = temp_dir("harden2_links");
  const fs::path victim = d / "victim.txt";
  std::ofstream(victim) << "precious\n";
  for (const char* name : {"attograd.lock", "config.toml", "metrics.jsonl", "grad_report_iter10.txt", "model.safetensors"}) {
    const fs::path run = d / (std::string("run_") + name);
    fs::create_directories(run);
    fs::create_symlink(victim, run / name);
    for (auto mode : {train::RunDir::Mode::Fresh, train::RunDir::Mode::Overwrite, train::RunDir::Mode::Resume}) {
      const std::string msg = message_of([&] { train::RunDir r(run.string(), mode); });
      EXPECT_TRUE(contains(msg, (run / name).string() + ": is a symbolic link")) << name << ": " << msg;
    }
  }
  EXPECT_EQ(read_bytes(victim), "precious\n");
}

TEST(HardenRunFolderLinks, WritersReplaceOrRefuseALinkAndNeverWriteThroughIt) {
  const fs::path d = temp_dir("harden2_writers");
  const fs::path victim = d / "victim.txt";
  std::ofstream(victim) << "precious\n";
  // Replacing: the link itself is replaced by the new file.
  fs::create_symlink(victim, d / "config.toml");
  train::write_config_toml((d / "config.toml").string(), train::TrainConfig{});
  EXPECT_FALSE(fs::is_symlink(d / "config.toml"));
  // A temporary of our own pid planted as a link is not followed either.
  fs::create_symlink(victim, temporary_path((d / "model.png").string()));
  viz::Image(8, 8).save_png((d / "model.png").string());
  EXPECT_EQ(viz::png_dimensions((d / "model.png").string()), std::make_pair(8, 8));
  // Appending: a link is refused; a new file is never one that exists.
  fs::create_symlink(victim, d / "log.txt");
  EXPECT_TRUE(contains(message_of([&] { AppendFile::open_append((d / "log.txt").string()); }), "symbolic link"));
  EXPECT_EQ(AppendFile::create_new((d / "log.txt").string()), nullptr);
  EXPECT_EQ(read_bytes(victim), "precious\n");
}

// ---- 4. every write checked ---------------------------------------------------------------------

TEST(HardenCheckedWrites, AFailedWriteThrowsNamingTheFileAndTheLimit) {
  const fs::path d = temp_dir("harden2_writes");
  const std::string got = in_child([&] {
    std::signal(SIGXFSZ, SIG_IGN);  // as the attograd program does
    struct rlimit rl {200000, 200000};
    ::setrlimit(RLIMIT_FSIZE, &rl);
    std::string out;
    // An atomic replace past the limit keeps the old file and removes its temporary.
    const std::string path = (d / "model.safetensors").string();
    write_file_atomically(path, "old");
    out += message_of([&] { write_file_atomically(path, std::string(300000, 'x')); }) + "\n";
    out += "kept=" + read_bytes(path) + " tmp=" + std::to_string(fs::exists(temporary_path(path))) + "\n";
    // TensorBoard events: the event that does not fit throws at once, naming the file.
    tensorboard::EventWriter w((d / "tb").string());
    for (int i = 0; i < 100000; ++i) {
      const std::string m = message_of([&] { w.add_text("t", std::string(1000, 'y'), i); });
      if (m != "no error") return out + m;
    }
    return out + "never failed";
  });
  EXPECT_TRUE(contains(got, "model.safetensors: cannot save: write to")) << got;
  EXPECT_TRUE(contains(got, "File too large (the file-size limit, ulimit -f, is 200000 bytes)")) << got;
  EXPECT_TRUE(contains(got, "kept=old tmp=0")) << got;
  EXPECT_TRUE(contains(got, (d / "tb").string() + "/events.out.tfevents.")) << got;
  EXPECT_TRUE(contains(got, ": write failed: File too large")) << got;
}

TEST(HardenCheckedWrites, ATornLastMetricsLineIsWhereTheFileWasCut) {
  const fs::path d = temp_dir("harden2_torn");
  // Complete JSON, but without its newline: a write cut short by a full disk. Not data.
  std::ofstream(d / "metrics.jsonl") << R"({"iter":0,"train_loss":4,"val_loss":4,"lr":0})" "\n"
                                     << R"({"iter":10,"train_loss":3,"val_loss":null,"lr":1e-4})" "\n"
                                     << R"({"iter":20,"train_loss":2,"val_loss":null,"lr":2e-4})";
  const auto rows = viz::read_metrics((d / "metrics.jsonl").string());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows.back().iter, 10);
}

TEST(HardenCheckedWrites, ResumeDropsATornLastMetricsLine) {
  const fs::path d = temp_dir("harden2_torn_resume");
  train::TrainConfig cfg = tiny_run(d, "run");
  std::ostringstream out;
  train::train_lm(cfg, out);
  const fs::path metrics = fs::path(cfg.out_dir) / "metrics.jsonl";
  std::ofstream(metrics, std::ios::app) << R"({"iter":3,"train_lo)";  // killed mid-line
  train::resume_lm(cfg.out_dir, "", 0, false, out);
  for (const std::string& line : read_lines(metrics)) EXPECT_EQ(line.find("train_lo\""), std::string::npos) << line;
  EXPECT_EQ(read_bytes(metrics).back(), '\n');
  EXPECT_NO_THROW(viz::read_metrics(metrics.string()));
}

// ---- 5. SIGHUP, a closed output, SIGXFSZ ----------------------------------------------------------

TEST(HardenSignals, SighupStopsLikeSigtermUnlessIgnoredByNohup) {
  const std::string got = in_child([] {
    std::string out;
    // The terminal's default first: a test run started under nohup (or by a runner that ignores
    // SIGHUP) hands its children SIGHUP ignored, which the guard rightly honours.
    std::signal(SIGHUP, SIG_DFL);
    {
      train::InterruptGuard g;
      ::raise(SIGHUP);
      out += "requested=" + std::to_string(train::InterruptGuard::requested()) +
             " signal=" + std::to_string(train::InterruptGuard::signal_number());
    }
    std::signal(SIGHUP, SIG_IGN);  // nohup
    {
      train::InterruptGuard g;
      ::raise(SIGHUP);
      out += " nohup_requested=" + std::to_string(train::InterruptGuard::requested());
    }
    return out;
  });
  EXPECT_EQ(got, "requested=1 signal=1 nohup_requested=0");
}

TEST(HardenSignals, AClosedStandardOutputIsAStopRequest) {
  const std::string got = in_child([] {
    train::install_process_signal_handlers();
    int fds[2];
    if (::pipe(fds) != 0) return std::string("pipe failed");
    ::close(fds[0]);  // the reader is gone
    ::dup2(fds[1], STDOUT_FILENO);
    train::InterruptGuard g;
    std::string out = "before=" + std::to_string(train::InterruptGuard::requested());
    std::cout << "a line\n" << std::flush;  // EPIPE, and a SIGPIPE that must not kill
    out += " after=" + std::to_string(train::InterruptGuard::requested()) +
           " pipe=" + std::to_string(train::InterruptGuard::output_closed_pipe()) +
           " signal=" + std::to_string(train::InterruptGuard::signal_number());
    return out;
  });
  EXPECT_EQ(got, "before=0 after=1 pipe=1 signal=13");
}

// ---- 6. OpenBLAS in a small address space ----------------------------------------------------------

// OpenBLAS's allocator of work buffers (exported by libopenblas), as autograd/blas_buffers.cpp uses it.
extern "C" void* blas_memory_alloc(int procpos);
extern "C" void blas_memory_free(void* buffer);

TEST(HardenAddressSpace, OpenBlasBufferIsWhatTheEstimateSays) {
  // Taking buffers from OpenBLAS's table one after another (holding them) reaches a slot not
  // mapped yet: the address space then grows by one buffer, which is what attograd counts.
  const std::string got = in_child([] {
    std::vector<void*> held;
    int64_t growth = 0;
    for (int i = 0; i < 100 && growth == 0; ++i) {
      const int64_t before = address_space_in_use();
      void* p = blas_memory_alloc(0);
      if (!p) break;
      held.push_back(p);
      growth = address_space_in_use() - before;
    }
    for (void* p : held) blas_memory_free(p);
    return std::to_string(growth);
  });
  const int64_t growth = std::stoll(got);
  EXPECT_GT(growth, kBlasBufferBytes - 16 * 4096) << "OpenBLAS's BUFFER_SIZE changed: update kBlasBufferBytes";
  EXPECT_LE(growth, kBlasBufferBytes) << "OpenBLAS's BUFFER_SIZE changed: update kBlasBufferBytes";
}

TEST(HardenAddressSpace, BuffersAreReservedOnlyWhileTheAddressSpaceHoldsThem) {
  // Room for two more buffers, four asked: two are reserved (OpenBLAS would otherwise spin
  // forever mapping the third); reserve_blas_buffers_for_threads then runs on that many
  // threads (cli.harden.address_space), or refuses when none fits.
  const std::string got = in_child([] {
    const int before = blas_buffers_reserved();
    const rlim_t limit = static_cast<rlim_t>(address_space_in_use() + 2 * kBlasBufferBytes + (60 << 20));
    struct rlimit rl {limit, limit};
    ::setrlimit(RLIMIT_AS, &rl);
    const int n = reserve_blas_buffers(before + 4);
    return std::to_string(n - before) + " " + std::to_string(blas_buffers_reserved() - before);
  });
  EXPECT_EQ(got, "2 2");
  // The tensors then get what is left, checked the same way.
  const std::string tensors = in_child([] {
    const rlim_t limit = static_cast<rlim_t>(address_space_in_use() + (100 << 20));
    struct rlimit rl {limit, limit};
    ::setrlimit(RLIMIT_AS, &rl);
    return message_of([] { require_address_space("the model", int64_t(1) << 30, "lower --batch"); });
  });
  EXPECT_TRUE(contains(tensors, "the model needs about 1.07 GB of address space, more than the")) << tensors;
  EXPECT_NO_THROW(require_address_space("x", int64_t(1) << 40, "-"));  // no limit here: nothing to check
}

// ---- 7. ranks agree (one process: nothing to compare; mpi.harden.* runs two) ------------------------

TEST(HardenRankAgreement, OneProcessHasNothingToCompare) {
  EXPECT_NO_THROW(train::check_ranks_agree(distributed::Comm::single(), train::TrainConfig{}));
}

// ---- 8. no dead ends ---------------------------------------------------------------------------------

TEST(HardenDeadEnds, ARunKilledBeforeItsFirstCheckpointIsStartedOver) {
  const fs::path d = temp_dir("harden2_deadend");
  const fs::path run = d / "run";
  fs::create_directories(run);
  std::ofstream(run / "metrics.jsonl") << "";
  std::ofstream(run / "config.toml") << "iters = 5\n";
  const std::string msg = message_of([&] { train::RunDir::require_checkpoint(run.string()); });
  EXPECT_TRUE(contains(msg, "stopped before its first checkpoint, so there is nothing to resume; start it again with "
                            "attograd train --config " + (run / "config.toml").string()))
      << msg;
  {
    train::RunDir fresh(run.string(), train::RunDir::Mode::Fresh);  // no "already holds a run"
    EXPECT_EQ(fresh.removed_temporaries().size(), 2u);
  }
  EXPECT_FALSE(fs::exists(run / "metrics.jsonl"));
  // With a checkpoint it is a run: refused without --overwrite, as before.
  std::ofstream(run / "metrics.jsonl") << "";
  std::ofstream(run / "model.safetensors") << "x";
  EXPECT_THROW(train::RunDir(run.string(), train::RunDir::Mode::Fresh), train::ConfigError);
}

TEST(HardenDeadEnds, TheConfigOfAnInitFromRunIsAcceptedBack) {
  train::TrainConfig c;
  c.init_from = "runs/base";
  c.model.n_layer = 2;
  c.model.dropout = 0.1;
  train::TrainConfig back;
  const auto keys = train::parse_config_toml(train::config_to_toml(c), "config.toml", back);
  EXPECT_TRUE(keys.count("init-from") && keys.count("dropout"));
  EXPECT_FALSE(keys.count("layers") || keys.count("heads") || keys.count("embd") || keys.count("block") ||
               keys.count("model") || keys.count("hidden"));
  EXPECT_EQ(back.model.dropout, 0.1);
}

// ---- 9. values that ask for too much ------------------------------------------------------------------

TEST(HardenValues, FlagsThatGrowBuffersAreEstimatedAndRefusedByName) {
  train::TrainConfig c;
  c.eval_iters = 1'000'000'000'000'000;
  const std::string msg = error_of<train::ConfigError>([&] { train::require_training_fits(c); });
  EXPECT_TRUE(contains(msg, "--eval-iters 1000000000000000: the losses of each evaluation (8 bytes a batch) would need 8e+03 TB"))
      << msg;
  c.eval_iters = 20;
  c.sample_tokens = 4'000'000'000'000'000'000;
  EXPECT_TRUE(contains(error_of<train::ConfigError>([&] { train::require_training_fits(c); }), "--sample-tokens"));
}

TEST(HardenValues, AnAttentionCaseAskingForGigabytesIsRefusedBeforeRunning) {
  const fs::path d = temp_dir("harden2_attn");
  // 180 KB of inputs (L = S = 15000, E = 1) whose (L, S) weights and gradients need gigabytes.
  const int64_t L = 15000;
  const Tensor x = Tensor::zeros({L, 1, 1}, DType::Float32);
  const std::string path = (d / "big.safetensors").string();
  save_safetensors(path,
                   {{"query", x}, {"key", x}, {"value", x}, {"in_proj_weight", Tensor::zeros({3, 1}, DType::Float32)},
                    {"out_proj.weight", Tensor::zeros({1, 1}, DType::Float32)}},
                   {{"num_heads", "1"}});
  EXPECT_LT(fs::file_size(path), 200'000u);
  const SafeTensorsFile f = SafeTensorsFile::load(path);
  EXPECT_GT(nn::attention_probe_memory_bytes(f, 1, false), int64_t(6) << 30);
  const std::string got = in_child([&] {
    // 4 GB beyond what the process maps already: an absolute 4 GB is below what ASan's shadow
    // maps, and then the child's first allocation that needs a new mapping fails, not the probe.
    const rlim_t limit = static_cast<rlim_t>(address_space_in_use() + (int64_t(4) << 30));
    struct rlimit rl {limit, limit};
    ::setrlimit(RLIMIT_AS, &rl);
    return message_of([&] { nn::run_attention_probe(f); });
  });
  EXPECT_TRUE(contains(got, path + ": running this case needs about 7.2 GB")) << got;
}

// ---- 10. plots of extreme values --------------------------------------------------------------------

TEST(HardenPlot, TicksOfHugeCloseValuesAreBoundedAndReadable) {
  // 9e18 / step is beyond 2^53: the old loop's k += 1 stopped advancing and grew forever.
  const std::string got = in_child([] {
    const auto t = viz::nice_ticks(9e18, 9e18 + 1024, 10);
    return std::to_string(t.size());
  }, 10);
  ASSERT_NE(got, "timed out");
  EXPECT_LE(std::stoi(got), 20);
  EXPECT_EQ(viz::axis_offset(9e18, 9e18 + 1024), 9e18);
  EXPECT_EQ(viz::axis_offset(1e17, 1e17 + 64), 1e17);
  EXPECT_EQ(viz::axis_offset(0, 5000), 0);
  EXPECT_EQ(viz::axis_offset(1.2, 4.5), 0);
  const auto rel = viz::nice_ticks(0, 1024, 10);  // what the axis then shows: "0 200 400 ... 1000"
  EXPECT_EQ(rel.front(), 0);
  EXPECT_EQ(rel.back(), 1000);
  // A whole plot of such values finishes.
  const std::string plotted = in_child([] {
    viz::Series s{"loss", {9e18, 9e18 + 1024}, {1e17, 1e17 + 64}, viz::Color{0, 0, 0}, 1.5, 2};
    const viz::Image img = viz::render_plot({viz::Panel{"loss", {s}, 1}}, viz::PlotOptions{640, 480, "t", "step"});
    return std::to_string(img.width());
  }, 20);
  EXPECT_EQ(plotted, "640");
}
