// The profiler (autograd/profiler.h) and what train/logging/profile.h makes of its events: nothing is
// recorded when it is off, scopes nest per thread, each thread has its own buffer, a training
// step's backward events are exactly the graph's nodes, and the op table's arithmetic.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/profiler.h"
#include "models/registry.h"
#include "train/logging/profile.h"

namespace ag {
namespace {

using profiler::Category;
using profiler::Event;
using profiler::RecordScope;
using profiler::ThreadEvents;

size_t count_events(const std::vector<ThreadEvents>& threads) {
  size_t n = 0;
  for (const auto& t : threads) n += t.events.size();
  return n;
}

void some_ops() {
  const Tensor a = Tensor::randn({64, 64}).requires_grad_(), b = Tensor::randn({64, 64}).requires_grad_();
  sum(relu(matmul(a, b))).backward();
}

TEST(Profiler, RecordsNothingWhenOff) {
  EXPECT_FALSE(profiler::enabled());
  profiler::start();
  profiler::pause();
  some_ops();
  { RecordScope s("paused", Category::Phase); }
  const auto threads = profiler::stop();
  EXPECT_EQ(count_events(threads), 0u);
  EXPECT_FALSE(profiler::enabled());
  // and after stop(), a scope is a no-op too
  some_ops();
  profiler::start();
  EXPECT_EQ(count_events(profiler::stop()), 0u);
}

TEST(Profiler, ScopesNestOnTheirThread) {
  profiler::start();
  {
    RecordScope outer("outer", Category::Phase);
    { RecordScope a("a", Category::Op, 1, 2, 3); }
    {
      RecordScope b("b", Category::Op);
      RecordScope c("c", Category::Gemm);
    }
  }
  const auto threads = profiler::stop();
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads[0].tid, 0);
  const auto& ev = threads[0].events;
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_STREQ(ev[0].name, "outer");
  EXPECT_STREQ(ev[1].name, "a");
  EXPECT_STREQ(ev[2].name, "b");
  EXPECT_STREQ(ev[3].name, "c");
  EXPECT_EQ(ev[1].args[2], 3);
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_LE(ev[0].begin_ns, ev[i].begin_ns);
    EXPECT_LE(ev[i].end_ns, ev[0].end_ns);
  }
  EXPECT_LE(ev[1].end_ns, ev[2].begin_ns);  // siblings in order
  EXPECT_LE(ev[2].begin_ns, ev[3].begin_ns);
  EXPECT_LE(ev[3].end_ns, ev[2].end_ns);
}

TEST(Profiler, EachThreadHasItsOwnBuffer) {
  profiler::start();
  auto work = [](int n) {
    for (int i = 0; i < n; ++i) RecordScope s("task", Category::PoolTask, i, i + 1);
  };
  std::thread t1(work, 100), t2(work, 200);
  t1.join();
  t2.join();
  const auto threads = profiler::stop();
  ASSERT_EQ(threads.size(), 3u);  // this thread (tid 0, no events) and the two others
  EXPECT_TRUE(threads[0].events.empty());
  std::multiset<size_t> sizes = {threads[1].events.size(), threads[2].events.size()};
  EXPECT_EQ(sizes, (std::multiset<size_t>{100, 200}));
  EXPECT_NE(threads[1].tid, threads[2].tid);
  for (const auto& t : threads)
    for (size_t i = 1; i < t.events.size(); ++i) EXPECT_EQ(t.events[i].args[0], t.events[i - 1].args[0] + 1);
}

// A chunk of a parallel_for that a worker runs is recorded on that worker's thread. Each chunk
// waits (up to 10 s) until the other has begun, so the two run on two threads at once.
TEST(Profiler, PoolTasksOnTheirThreads) {
  const int saved = parallel::num_threads();
  parallel::set_num_threads(2);
  std::atomic<int> started{0};
  profiler::start();
  parallel::parallel_for(2, 1, [&](int64_t, int64_t) {
    ++started;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  });
  const auto threads = profiler::stop();
  parallel::set_num_threads(saved);
  ASSERT_EQ(started.load(), 2);
  std::set<int> tids;
  for (const auto& t : threads)
    for (const Event& e : t.events) {
      EXPECT_EQ(e.cat, Category::PoolTask);
      tids.insert(t.tid);
    }
  EXPECT_EQ(tids.size(), 2u) << "the two chunks, on two threads";
}

// A GPT's training step: one backward event per node of its graph, named as the node; every
// op of the graph has forward events; GEMMs carry their sizes.
TEST(Profiler, StepEventsMatchTheGraph) {
  const int saved = parallel::num_threads();
  parallel::set_num_threads(2);
  models::ModelConfig c = models::GPTConfig{.vocab_size = 11, .n_layer = 2, .n_head = 2, .n_embd = 32, .block_size = 16};
  Generator gen(3);
  auto model = models::make_model(c, DType::Float32, gen);
  model->train();
  const Tensor x = Tensor::randint(0, 11, {4, 16}, gen), y = Tensor::randint(0, 11, {4, 16}, gen);
  profiler::start();
  Tensor loss;
  {
    profiler::ScopeSequence phase("forward", Category::Phase);
    loss = model->loss(x, y);
    phase.next("backward");
    std::map<std::string, int> nodes;
    for (const Node* n : topological_order(loss.grad_fn().get())) ++nodes[n->op];
    loss.backward();
    profiler::pause();  // (the checks below run ops)
    const auto threads = profiler::stop();
    std::map<std::string, int> backward;
    std::set<std::string> forward;
    int gemms = 0;
    for (const auto& t : threads)
      for (const Event& e : t.events) {
        if (e.cat == Category::Backward) ++backward[e.name];
        if (e.cat == Category::Op) forward.insert(e.name);
        if (e.cat == Category::Gemm) {
          ++gemms;
          EXPECT_GT(e.args[0] * e.args[1] * e.args[2], 0) << "a GEMM's M, N, K";
        }
      }
    EXPECT_EQ(backward, nodes) << "one backward event per node, named as the node";
    for (const auto& [op, n] : nodes) EXPECT_TRUE(forward.count(op)) << "no forward event of " << op;
    EXPECT_GT(gemms, 0);
    // the table: every node's op has a line with its forward and backward calls
    const train::ProfileSummary s = train::summarize(threads);
    for (const auto& [op, n] : nodes) {
      auto it = std::find_if(s.ops.begin(), s.ops.end(), [&](const train::OpStats& r) { return r.name == op; });
      ASSERT_NE(it, s.ops.end()) << op;
      EXPECT_EQ(it->bwd_calls, n) << op;
      EXPECT_GE(it->fwd_calls, n) << op;
    }
    EXPECT_NEAR(s.gemm_gflop, [&] {
      double g = 0;
      for (const auto& t : threads)
        for (const Event& e : t.events)
          if (e.cat == Category::Gemm) g += 2.0 * e.args[0] * e.args[1] * e.args[2] / 1e9;
      return g;
    }(), 1e-12);
  }
  parallel::set_num_threads(saved);
}

Event ev(const char* name, Category cat, int64_t b, int64_t e, int64_t a0 = 0, int64_t a1 = 0, int64_t a2 = 0) {
  Event x;
  x.name = name;
  x.cat = cat;
  x.begin_ns = b;
  x.end_ns = e;
  x.args[0] = a0, x.args[1] = a1, x.args[2] = a2;
  return x;
}

// The table's arithmetic on a made-up trace: self times, the attribution of an op called
// inside a backward to that node, and of a GEMM on another thread to the op that started it.
TEST(ProfileTable, SelfTimesAndAttribution) {
  const int64_t ms = 1000000;
  ThreadEvents main{0, {ev("step", Category::Step, 0, 100 * ms), ev("forward", Category::Phase, 0, 40 * ms),
                        ev("linear", Category::Op, 0, 30 * ms), ev("add", Category::Op, 10 * ms, 15 * ms),
                        ev("sgemm", Category::Gemm, 16 * ms, 26 * ms, 100, 100, 100),
                        ev("backward", Category::Phase, 40 * ms, 98 * ms), ev("linear", Category::Backward, 40 * ms, 90 * ms),
                        ev("matmul", Category::Op, 41 * ms, 80 * ms)}};
  ThreadEvents worker{1, {ev("pool task", Category::PoolTask, 42 * ms, 60 * ms, 0, 8),
                          ev("sgemm", Category::Gemm, 42 * ms, 60 * ms, 200, 100, 100)}};
  const train::ProfileSummary s = train::summarize({main, worker});
  EXPECT_EQ(s.steps, 1);
  EXPECT_DOUBLE_EQ(s.step_ms, 100);
  EXPECT_DOUBLE_EQ(s.covered_ms, 98);
  ASSERT_EQ(s.ops.size(), 2u);  // linear (30 + 50 self), add (5); matmul is linear's backward's
  EXPECT_EQ(s.ops[0].name, "linear");
  EXPECT_EQ(s.ops[0].fwd_calls, 1);
  EXPECT_DOUBLE_EQ(s.ops[0].fwd_total_ms, 30);
  EXPECT_DOUBLE_EQ(s.ops[0].fwd_self_ms, 25);
  EXPECT_EQ(s.ops[0].bwd_calls, 1);
  EXPECT_DOUBLE_EQ(s.ops[0].bwd_total_ms, 50);
  EXPECT_DOUBLE_EQ(s.ops[0].bwd_self_ms, 50);
  EXPECT_DOUBLE_EQ(s.ops[0].fwd_gemm_gflop, 2e6 / 1e9);
  EXPECT_DOUBLE_EQ(s.ops[0].bwd_gemm_gflop, 4e6 / 1e9);  // the worker's GEMM, inside linear's backward
  EXPECT_EQ(s.ops[1].name, "add");
  EXPECT_DOUBLE_EQ(s.ops[1].fwd_self_ms, 5);
  EXPECT_EQ(s.gemm_calls, 2);
  EXPECT_EQ(s.pool_tasks, 1);
  const std::string table = train::format_profile_table(s, "test");
  EXPECT_NE(table.find("linear"), std::string::npos);
  EXPECT_NE(table.find("together 98.0% of the step time"), std::string::npos) << table;
}

TEST(ProfileTable, ChromeTraceIsCompleteEvents) {
  ThreadEvents main{0, {ev("step", Category::Step, 0, 5000, 7), ev("sgemm", Category::Gemm, 1000, 2500, 2, 3, 4)}};
  const auto j = nlohmann::json::parse(train::chrome_trace_json({main}, "t"));
  int complete = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++complete;
    if (e["name"] == "sgemm") {
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1.0);  // µs
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 1.5);
      EXPECT_EQ(e["args"]["K"], 4);
      EXPECT_EQ(e["cat"], "gemm");
    } else {
      EXPECT_EQ(e["args"]["iter"], 7);
    }
  }
  EXPECT_EQ(complete, 2);
}

}  // namespace
}  // namespace ag
