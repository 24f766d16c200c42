// Hostile files, flags and signals (one test per class of attack): each must end in a clear,
// short error, never a crash, a hang, an unbounded allocation or a lost run.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "base/atomic_file.h"
#include "base/checked.h"
#include "autograd/parallel.h"
#include "autograd/safetensors.h"
#include "base/short_quote.h"
#include "data/text_file.h"
#include "models/registry.h"
#include "models/transformer_lm.h"
#include "cli/harness/attention_probe.h"
#include "tests/hostile/harden_util.h"
#include "tests/test_util.h"
#include "train/run_folder/checkpoint.h"
#include "train/config/config_error.h"
#include "train/memory_check.h"
#include "train/run_folder/metadata_seal.h"
#include "train/run_folder/run_dir.h"
#include "train/run_folder/train_state.h"
#include "train/trainer.h"

using namespace ag;
using namespace ag::testing_util;
namespace fs = std::filesystem;

namespace {
// A safetensors file whose header is `header` (padded to a multiple of 8), with no data.
std::string file_with_header(std::string header) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header;
}

}  // namespace

// ---- 1. deeply nested JSON, and untrusted text in messages ------------------------------------

TEST(HardenSafeTensors, DeepNestingIsRefusedBeforeParsingWithAShortMessage) {
  for (int depth : {17, 10'000, 100'000}) {
    const std::string bytes = file_with_header("{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}");
    const std::string msg = error_of([&] { SafeTensorsFile::parse(bytes, "deep.safetensors"); });
    EXPECT_NE(msg.find("nests deeper than"), std::string::npos) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 300u) << depth;
  }
  // Brackets inside strings do not count, and a normal header parses.
  const std::string ok = file_with_header("{\"__metadata__\":{\"k\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}}");
  EXPECT_EQ(SafeTensorsFile::parse(ok, "ok").metadata().at("k").size(), 28u);
}

TEST(HardenSafeTensors, TextQuotedFromAFileIsCutToAShortPrefix) {
  const std::string long_name(20'000, 'n');
  std::vector<std::string> headers = {
      "{\"" + long_name + "\":{\"dtype\":\"F99\",\"shape\":[],\"data_offsets\":[0,0]}}",  // unknown dtype, long name
      "{\"t\":{\"dtype\":\"" + long_name + "\",\"shape\":[],\"data_offsets\":[0,0]}}",  // long dtype
      "{\"t\":" + std::string(5000, '1') + "x}",                                        // parser error on a long token
      "{\"__metadata__\":{\"" + long_name + "\":1}}",                                   // non-string metadata value
  };
  for (const auto& h : headers) {
    const std::string msg = error_of([&] { SafeTensorsFile::parse(file_with_header(h), "f.safetensors"); });
    EXPECT_EQ(msg.rfind("f.safetensors: ", 0), 0u) << msg.substr(0, 200);
    EXPECT_LT(msg.size(), 400u) << msg.substr(0, 400);
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
  EXPECT_EQ(short_quote("a\nb\x1b"), "a\\nb\\x1b");
  EXPECT_EQ(short_quote(std::string(100, 'x'), 10), std::string(10, 'x') + "... (100 bytes)");
  EXPECT_EQ(short_quote("\xC3\xA9\xC3\xA9", 3), "\xC3\xA9... (4 bytes)");  // never half a character
}

// ---- 2. sizes: checked arithmetic, shapes before building, memory up front ---------------------

TEST(HardenSizes, CheckedArithmeticThrowsInsteadOfWrapping) {
  EXPECT_EQ(checked::mul(3, 4, "x"), 12);
  EXPECT_EQ(checked::product({2, 3, 4}, "x"), 24);
  EXPECT_THROW(checked::mul(int64_t(1) << 62, 4, "x"), std::overflow_error);
  EXPECT_THROW(checked::add(INT64_MAX, 1, "x"), std::overflow_error);
  EXPECT_THROW(checked::mul(-1, 2, "x"), std::overflow_error);
}

TEST(HardenSizes, ParameterShapesMatchEveryRegisteredModel) {
  for (const auto& entry : models::model_registry()) {
    models::ModelConfig c;
    c.name = entry.name;
    c.vocab_size = 7;
    c.n_layer = 2;
    c.n_head = 2;
    c.n_embd = 8;
    c.block_size = 5;
    c.hidden = 12;
    const auto model = models::make_model(c);
    const auto params = model->named_parameters();
    const auto shapes = entry.parameters(c).shapes();
    ASSERT_EQ(static_cast<int64_t>(params.size()), entry.parameters(c).num_tensors()) << entry.name;
    ASSERT_EQ(params.size(), shapes.size()) << entry.name;
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_EQ(params[i].first, shapes[i].first) << entry.name;
      EXPECT_EQ(params[i].second.shape(), shapes[i].second) << params[i].first;
    }
    // The estimate covers at least the weights, gradients and moments.
    EXPECT_GE(entry.memory_bytes(c, 4, true), 16 * model->num_parameters()) << entry.name;
  }
}

TEST(HardenSizes, HugeModelsAndBatchesAreRefusedUpFront) {
  models::ModelConfig c = models::GPTConfig{65, 4, 4, 128, 64, 0.0};
  EXPECT_NO_THROW(train::require_training_fits(c, 12));
  const std::string big_batch = error_of<train::ConfigError>([&] { train::require_training_fits(c, 1'000'000'000'000); });
  EXPECT_NE(big_batch.find("needs about"), std::string::npos) << big_batch;
  EXPECT_NE(big_batch.find("--batch"), std::string::npos) << big_batch;
  c.n_embd = int64_t(1) << 62;
  const std::string wide = error_of<train::ConfigError>([&] { train::require_training_fits(c, 12); });
  EXPECT_NE(wide.find("too large"), std::string::npos) << wide;
  c.n_embd = 128;
  c.n_layer = 1'000'000'000;
  EXPECT_THROW(train::require_training_fits(c, 12), train::ConfigError);
}

TEST(HardenSizes, CheckpointMetadataIsCheckedAgainstItsTensorsBeforeBuilding) {
  const fs::path d = temp_dir("harden_nlayer");
  models::TransformerLM m(models::GPTConfig{3, 1, 1, 4, 4, 0.0});
  const auto tok = data::CharTokenizer::from_chars({"a", "b", "c"});
  std::vector<std::pair<std::string, Tensor>> ts;
  for (auto& [n, p] : m.named_parameters()) ts.emplace_back(n, p);
  auto md = train::model_metadata(m, tok);
  md["n_layer"] = "2147483647";
  train::seal_metadata(md);
  const std::string p = (d / "m.safetensors").string();
  save_safetensors(p, ts, md);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string msg = error_of([&] { train::load_model(p); });
  EXPECT_NE(msg.find("tensors, but the file holds 16"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

// ---- 3. inputs that never end -------------------------------------------------------------------

TEST(HardenTextFile, OnlyBoundedRegularFilesAreRead) {
  const fs::path d = temp_dir("harden_text");
  EXPECT_NE(error_of([] { data::read_text_file("/dev/zero", "z"); }).find("character device"), std::string::npos);
  EXPECT_NE(error_of([&] { data::read_text_file(d.string(), "d"); }).find("is a directory"), std::string::npos);
  const std::string fifo = (d / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { data::read_text_file(fifo, "f"); }).find("FIFO"), std::string::npos);  // and no hang
  std::ofstream(d / "ten.txt") << "0123456789";
  EXPECT_EQ(data::read_text_file((d / "ten.txt").string(), "t", "", 10), "0123456789");
  EXPECT_NE(error_of([&] { data::read_text_file((d / "ten.txt").string(), "t", "", 9); }).find("too large"),
            std::string::npos);
  EXPECT_NE(error_of([&] { data::read_text_file((d / "none").string(), "n", "a hint"); }).find("not found; a hint"),
            std::string::npos);
}

// ---- 4. threads -----------------------------------------------------------------------------------

TEST(HardenThreads, SameThreadCountSameChunksAndResults) {
  auto chunked_sum = [] {
    std::vector<double> partial(64, 0.0);
    std::atomic<int> chunks{0};
    parallel::parallel_for(100'000, 1000, [&](int64_t b, int64_t e) {
      double s = 0;
      for (int64_t i = b; i < e; ++i) s += 1.0 / static_cast<double>(i + 1);
      partial[static_cast<size_t>(chunks++)] = s;  // order of chunks may vary; the set may not
    });
    std::multiset<double> out(partial.begin(), partial.begin() + chunks.load());
    return out;
  };
  const int saved = parallel::num_threads();
  for (int n : {1, 2, 3}) {
    parallel::set_num_threads(n);
    EXPECT_EQ(parallel::num_threads(), n);
    EXPECT_EQ(chunked_sum(), chunked_sum()) << n << " threads";
    EXPECT_EQ(chunked_sum().size(), static_cast<size_t>(n));
  }
  EXPECT_THROW(parallel::set_num_threads(-1), std::invalid_argument);
  EXPECT_THROW(parallel::set_num_threads(parallel::kMaxThreads + 1), std::invalid_argument);
  parallel::set_num_threads(saved);
}

// Chunks are claimed dynamically (the caller takes a chunk whose worker is late): over many
// short jobs in a row every chunk still runs exactly once, with the same boundaries.
TEST(HardenThreads, ManyShortJobsRunEachChunkExactlyOnce) {
  const int saved = parallel::num_threads();
  for (int n : {2, 3}) {
    parallel::set_num_threads(n);
    for (int job = 0; job < 20000; ++job) {
      const int64_t len = 2 + job % 7;
      std::array<std::atomic<int>, 9> hits{};
      std::mutex mu;
      std::set<std::pair<int64_t, int64_t>> ranges, expected;
      parallel::parallel_for(len, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        std::lock_guard<std::mutex> lock(mu);
        ranges.insert({b, e});
      });
      for (int p = 0; p < n; ++p)
        if (len * p / n < len * (p + 1) / n) expected.insert({len * p / n, len * (p + 1) / n});
      ASSERT_EQ(ranges, expected) << "job " << job;
      for (int64_t i = 0; i < len; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "job " << job;
    }
  }
  parallel::set_num_threads(saved);
}

// parallel_for_claimed hands each item to exactly one thread, and a slower thread takes fewer:
// here the caller's items take 5 ms each and a worker's none, so the workers claim most.
TEST(HardenThreads, ClaimedItemsRunOnceAndASlowThreadTakesFewer) {
  const int saved = parallel::num_threads();
  for (int n : {1, 2, 3}) {
    parallel::set_num_threads(n);
    std::vector<std::atomic<int>> hits(40);
    std::atomic<int> on_caller{0}, bodies{0};
    const std::thread::id caller = std::this_thread::get_id();
    parallel::parallel_for_claimed(40, 1, [&](auto next) {
      ++bodies;
      for (int64_t i = next(); i >= 0; i = next()) {
        ++hits[static_cast<size_t>(i)];
        if (std::this_thread::get_id() == caller) {
          ++on_caller;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
    });
    for (const auto& h : hits) ASSERT_EQ(h.load(), 1) << n << " threads";
    EXPECT_EQ(bodies.load(), n);
    if (n > 1) {
      EXPECT_LT(on_caller.load(), 20) << "the slow caller took a fixed half or more";
    }
  }
  // below twice the grain: one body on the calling thread takes every item
  std::atomic<int> bodies{0}, items{0};
  parallel::parallel_for_claimed(5, 3, [&](auto next) {
    ++bodies;
    for (int64_t i = next(); i >= 0; i = next()) ++items;
  });
  EXPECT_EQ(bodies.load(), 1);
  EXPECT_EQ(items.load(), 5);
  parallel::set_num_threads(saved);
}

TEST(HardenThreads, NestedCallsRunInlineAndCoverEverything) {
  const int saved = parallel::num_threads();
  parallel::set_num_threads(3);
  std::vector<std::atomic<int>> hits(3000);
  parallel::parallel_for(3, 1, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row)
      parallel::parallel_for(1000, 1, [&](int64_t ib, int64_t ie) {
        for (int64_t i = ib; i < ie; ++i) ++hits[static_cast<size_t>(row * 1000 + i)];
      });
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
  parallel::set_num_threads(saved);
}

TEST(HardenThreads, AThrowingBodyIsRethrownAndThePoolStaysUsable) {
  const int saved = parallel::num_threads();
  parallel::set_num_threads(4);
  for (int thrower : {0, 3}) {  // the first chunk and the last (any thread may run either)
    std::atomic<int> finished{0};
    try {
      parallel::parallel_for(4, 1, [&](int64_t b, int64_t) {
        if (b == thrower) throw std::runtime_error("chunk " + std::to_string(b));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        ++finished;
      });
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "chunk " + std::to_string(thrower));
    }
    EXPECT_EQ(finished.load(), 3);  // the other chunks finished before the rethrow
    // Not stuck "inside": the next call runs on all four threads again. Each chunk waits
    // until all four have started, so they must be on four threads at once (a thread claims
    // another chunk only after finishing one); inline, the first would time out alone.
    std::mutex mu;
    std::set<std::thread::id> ids;
    std::atomic<int> started{0};
    parallel::parallel_for(4, 1, [&](int64_t, int64_t) {
      ++started;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (started.load() < 4 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(ids.size(), 4u);
  }
  parallel::set_num_threads(saved);
}

// ---- 5. finite weights only -----------------------------------------------------------------------

TEST(HardenFinite, ANonFiniteModelIsNeverWrittenNorResumed) {
  const fs::path d = temp_dir("harden_finite");
  models::TransformerLM m(models::GPTConfig{3, 1, 1, 4, 4, 0.0});
  const auto tok = data::CharTokenizer::from_chars({"a", "b", "c"});
  const std::string p = (d / "model.safetensors").string();
  train::save_model(p, m, tok);
  const std::string before = read_bytes(p);
  m.named_parameters()[3].second.data<float>()[0] = NAN;
  const std::string msg = error_of([&] { train::save_model(p, m, tok); });
  EXPECT_NE(msg.find("not saved: tensor '" + m.named_parameters()[3].first + "'"), std::string::npos) << msg;
  EXPECT_EQ(read_bytes(p), before);  // the good file stays

  // A train state holding a NaN (sealed, so only the value is wrong) is refused on resume.
  train::TrainConfig c = tiny_run(d, "run");
  std::ostringstream log;
  train::train_lm(c, log);
  const std::string state = (fs::path(c.out_dir) / "train_state.safetensors").string();
  const auto good = SafeTensorsFile::load(state);
  std::vector<std::pair<std::string, Tensor>> ts;
  for (const auto& n : good.names()) ts.emplace_back(n, good.get(n));
  for (auto& [n, t] : ts)
    if (n == "optimizer.state.0.exp_avg") t.data<float>()[1] = INFINITY;  // the first parameter's moment
  auto md = good.metadata();
  train::seal_metadata(md);
  save_safetensors(state, ts, md);
  const std::string resumed = error_of([&] { train::resume_lm(c.out_dir, "", 0, false, log); });
  EXPECT_NE(resumed.find("'optimizer.state.0.exp_avg' holds a non-finite value"), std::string::npos) << resumed;
}

TEST(HardenFinite, ADivergingRunKeepsItsLastGoodModel) {
  const fs::path d = temp_dir("harden_diverge");
  train::TrainConfig c = tiny_run(d, "run");
  c.lr = 1e30;
  c.eval_every = 1;
  c.warmup = 0;
  c.grad_clip = 0;
  std::ostringstream log;
  EXPECT_THROW(train::train_lm(c, log), train::NonFiniteError);
  const auto loaded = train::load_model(c.out_dir);  // the model on disk is finite, so it loads
  EXPECT_TRUE(loaded.model != nullptr);
}

// ---- 7, 8. the run folder: lock, existing run, stale temporaries ------------------------------------

TEST(HardenRunDir, OneRunPerFolderAndNoSilentOverwrite) {
  const fs::path d = temp_dir("harden_rundir");
  const std::string dir = (d / "run").string();
  {
    train::RunDir first(dir, train::RunDir::Mode::Fresh);
    const std::string msg = error_of([&] { train::RunDir second(dir, train::RunDir::Mode::Resume); });
    EXPECT_NE(msg.find("in use by another attograd train (pid " + std::to_string(::getpid()) + ")"), std::string::npos)
        << msg;
  }
  std::ofstream(fs::path(dir) / "metrics.jsonl") << "{}\n";
  std::ofstream(fs::path(dir) / "model.best.safetensors") << "x";
  const std::string msg = error_of<train::ConfigError>([&] { train::RunDir again(dir, train::RunDir::Mode::Fresh); });
  EXPECT_NE(msg.find("already holds a run (model.best.safetensors, metrics.jsonl); continue it with --resume"),
            std::string::npos)
      << msg;
  { train::RunDir over(dir, train::RunDir::Mode::Overwrite); }
  EXPECT_FALSE(fs::exists(fs::path(dir) / "model.best.safetensors"));
  EXPECT_FALSE(fs::exists(fs::path(dir) / "metrics.jsonl"));
}

TEST(HardenRunDir, TemporariesOfDeadProcessesAreRemoved) {
  const fs::path d = temp_dir("harden_stale");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // its pid now names no process
  const fs::path dead = d / ("model.safetensors.tmp." + std::to_string(child));
  const fs::path live = d / ("model.safetensors.tmp." + std::to_string(::getppid()));
  const fs::path other = d / "notes.tmp.txt";
  for (const auto& p : {dead, live, other}) std::ofstream(p) << "x";
  train::RunDir run(d.string(), train::RunDir::Mode::Resume);
  EXPECT_EQ(run.removed_temporaries(), std::vector<std::string>{dead.string()});
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));
}

// ---- 10. sealed metadata; the probe's metadata keys ------------------------------------------------

TEST(HardenSeal, AnEditedHeadCountIsCaught) {
  const fs::path d = temp_dir("harden_seal");
  models::TransformerLM m(models::GPTConfig{3, 1, 4, 8, 4, 0.0});
  const auto tok = data::CharTokenizer::from_chars({"a", "b", "c"});
  const std::string p = (d / "model.safetensors").string();
  train::save_model(p, m, tok);
  const auto f = SafeTensorsFile::load(p);
  EXPECT_EQ(f.metadata().at("format_version"), "2");
  std::vector<std::pair<std::string, Tensor>> ts;
  for (const auto& n : f.names()) ts.emplace_back(n, f.get(n));
  auto md = f.metadata();
  md["n_head"] = "1";  // same shapes, another model
  save_safetensors(p, ts, md);
  EXPECT_NE(error_of([&] { train::load_model(p); }).find("checksum mismatch"), std::string::npos);
  md = f.metadata();
  md["format_version"] = "99";
  save_safetensors(p, ts, md);
  EXPECT_NE(error_of([&] { train::load_model(p); }).find("format_version \"99\""), std::string::npos);
}

TEST(HardenSeal, UnknownAttentionProbeMetadataIsRefused) {
  const fs::path d = temp_dir("harden_probe");
  const std::string p = (d / "case.safetensors").string();
  const Tensor x = Tensor::zeros({2, 4});
  save_safetensors(p, {{"query", x}, {"key", x}, {"value", x}, {"in_proj_weight", Tensor::zeros({12, 4})},
                       {"out_proj.weight", Tensor::zeros({4, 4})}},
                   {{"num_heads", "2"}, {"is_casual", "true"}});
  const std::string msg = error_of([&] { nn::run_attention_probe(SafeTensorsFile::load(p)); });
  EXPECT_NE(msg.find("unknown __metadata__ key 'is_casual'"), std::string::npos) << msg;
}

// ---- 11. tiny temperatures --------------------------------------------------------------------------

TEST(HardenSampling, ATemperatureThatOverflowsIsGreedy) {
  const std::vector<double> logits = {0.1, 2.5, -1.0, 2.4};
  Generator g(1);
  for (double t : {1e-320, 1e-310, 1e-300})
    for (int i = 0; i < 20; ++i) EXPECT_EQ(models::sample_token(logits, t, 0, g), 1) << t;
  EXPECT_EQ(models::sample_token(logits, 1e-320, 2, g), 1);
}
