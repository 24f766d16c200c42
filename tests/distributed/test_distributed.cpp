// The communicator and the bucketed gradient reducer (distributed/comm.h).
//
// The Distributed* tests hold for any number of ranks: ctest runs them once in one process and
// once under `mpirun -np 2` (mpi.unit_tests in tests/cli_mpi.cmake), where Comm::world() is
// real MPI.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <thread>

#include "autograd/ops.h"
#include "distributed/comm.h"

namespace ag::train {
namespace {

std::vector<Tensor> make_params(const std::vector<int64_t>& sizes) {
  std::vector<Tensor> ps;
  for (int64_t n : sizes) ps.push_back(Tensor::zeros({n}, DType::Float32).requires_grad_());
  return ps;
}

// A gradient that differs by rank: (i*0.25 + rank + 1 + k) * scale at element i of parameter k.
Tensor rank_grad(int64_t n, size_t k, int rank, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = (static_cast<float>(i) * 0.25f + float(rank + 1) + float(k)) * scale;
  return Tensor::from_vector(v, {n});
}

TEST(ReducerLayout, BucketsRunFromTheLastParameterBackwardsWithinTheCaps) {
  // 4 bytes per element; first cap 40 bytes (10 elements), then 80 bytes (20 elements).
  const auto ps = make_params({6, 5, 30, 4, 8, 3});
  distributed::Reducer r(distributed::Comm::single(), ps, 40, 80);
  // From the last: 3 + 8 = 11 > 10, so bucket 0 = {5}; then {4, 3} (8 + 4 = 12 ≤ 20, + 30 > 20);
  // {2} alone (larger than the cap, never split); {1, 0} (5 + 6 = 11).
  const std::vector<std::vector<size_t>> want = {{5}, {4, 3}, {2}, {1, 0}};
  EXPECT_EQ(r.buckets(), want);
  EXPECT_EQ(r.bytes_per_step(), (6 + 5 + 30 + 4 + 8 + 3) * 4);
}

TEST(ReducerLayout, RefusesNonFloat32Parameters) {
  std::vector<Tensor> ps = {Tensor::zeros({3}, DType::Float64).requires_grad_()};
  EXPECT_THROW(distributed::Reducer(distributed::Comm::single(), ps), std::invalid_argument);
}

TEST(ReducerProtocol, MisuseThrowsInsteadOfSendingAStaleGradient) {
  auto ps = make_params({4, 4});
  distributed::Reducer r(distributed::Comm::single(), ps, 16, 16);
  EXPECT_THROW(r.mark_ready(0), std::logic_error);  // before prepare()
  EXPECT_THROW(r.finish(), std::logic_error);
  r.prepare();
  r.mark_ready(1);
  EXPECT_THROW(r.mark_ready(1), std::logic_error);  // twice in one backward
  EXPECT_THROW(r.mark_ready(7), std::out_of_range);
  EXPECT_THROW(r.prepare(), std::logic_error);  // the step was not finished
  r.finish();
}

TEST(ReducerProtocol, BucketsLaunchInIndexOrderOnly) {
  auto ps = make_params({4, 4, 4});  // one parameter per bucket: bucket 0 = param 2, 1 = param 1, 2 = param 0
  distributed::Reducer r(distributed::Comm::single(), ps, 16, 16);
  ASSERT_EQ(r.buckets().size(), 3u);
  r.prepare();
  r.mark_ready(0);  // bucket 2 is complete, but buckets 0 and 1 are not: nothing may start
  r.finish();
  EXPECT_EQ(r.last_launched_early(), 0);
  r.prepare();
  r.mark_ready(1);  // bucket 1: still waits for bucket 0
  r.mark_ready(2);  // bucket 0: now 0 and 1 start, 2 waits for param 0
  r.finish();
  EXPECT_EQ(r.last_launched_early(), 2);
  r.prepare();
  for (size_t k : {2u, 1u, 0u}) r.mark_ready(k);
  r.finish();
  EXPECT_EQ(r.last_launched_early(), 3);
}

TEST(ReducerProtocol, AParameterWithoutGradientContributesZeros) {
  auto ps = make_params({3, 2});
  ps[0].set_grad(Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}));
  distributed::Reducer r(distributed::Comm::single(), ps);
  r.prepare();
  r.finish();
  ASSERT_TRUE(ps[1].grad().defined());
  EXPECT_EQ(ps[1].grad().to_double_vector(), (std::vector<double>{0, 0}));
  EXPECT_EQ(ps[0].grad().to_double_vector(), (std::vector<double>{1, 2, 3}));  // one rank: unchanged
}

TEST(ReducerHooks, BucketsStartDuringBackwardAndOnlyBetweenPrepareAndFinish) {
  auto ps = make_params({4, 4, 4});
  distributed::Reducer r(distributed::Comm::single(), ps, 16, 16);  // one parameter per bucket
  r.attach_hooks();
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4});
  auto loss = [&] { return sum(mul(ps[0], x)) + sum(mul(ps[1], x)) + sum(mul(mul(ps[2], ps[2]), x)); };
  loss().backward();  // a backward that does not communicate (no prepare): hooks do nothing
  r.prepare();
  loss().backward();  // accumulates onto the first: .grad = 2·dloss
  EXPECT_EQ(r.last_launched_early(), 0);
  r.finish();
  EXPECT_EQ(r.last_launched_early(), 3);  // every bucket was started by a hook, none by finish()
  EXPECT_EQ(ps[1].grad().to_double_vector(), (std::vector<double>{2, 4, 6, 8}));
}

// ---- on the world communicator: one process under ctest, N ranks under mpirun -------------

TEST(Distributed, ReducerAveragesGradientsOverRanks) {
  distributed::Comm& c = distributed::Comm::world();
  const std::vector<int64_t> sizes = {7, 300, 2, 1000, 5};
  auto ps = make_params(sizes);
  distributed::Reducer r(c, ps, 64, 2048);
  ASSERT_GE(r.buckets().size(), 3u);
  for (int step = 0; step < 3; ++step) {  // the same reducer serves many steps
    for (size_t k = 0; k < ps.size(); ++k) ps[k].set_grad(rank_grad(sizes[k], k, c.rank(), float(step + 1)));
    r.prepare();
    // Ranks become ready in different orders; the launches still happen in bucket order.
    for (size_t j = 0; j < ps.size(); ++j) r.mark_ready(c.rank() % 2 ? j : ps.size() - 1 - j);
    r.finish();
    // mean over ranks of (rank + 1) is (N + 1) / 2
    const double mean_rank_term = (c.size() + 1) / 2.0;
    for (size_t k = 0; k < ps.size(); ++k) {
      const auto g = ps[k].grad().to_double_vector();
      for (size_t i = 0; i < g.size(); ++i) {
        const double want = (double(i) * 0.25 + mean_rank_term + double(k)) * (step + 1);
        ASSERT_NEAR(g[i], want, 1e-6 * std::abs(want)) << "param " << k << " element " << i << " step " << step;
      }
    }
  }
}

TEST(Distributed, HooksAverageTheGradientsOfARealBackward) {
  distributed::Comm& c = distributed::Comm::world();
  std::vector<Tensor> ps = {Tensor::from_vector(std::vector<float>{1, -2, 3}, {3}).requires_grad_(),
                            Tensor::from_vector(std::vector<float>{0.5f, 4}, {2}).requires_grad_()};
  distributed::Reducer r(c, ps, 8, 8);
  r.attach_hooks();
  const double xr = c.rank() + 1;  // this rank's data
  r.prepare();
  (sum(ps[0] * xr) + sum(mul(ps[1], ps[1]) * xr)).backward();  // d/da = x, d/db = 2·b·x
  r.finish();
  EXPECT_EQ(r.last_launched_early(), 2);
  const double mean_x = (c.size() + 1) / 2.0;
  EXPECT_EQ(ps[0].grad().to_double_vector(), (std::vector<double>{mean_x, mean_x, mean_x}));
  EXPECT_EQ(ps[1].grad().to_double_vector(), (std::vector<double>{mean_x, 8 * mean_x}));
}

TEST(Distributed, BroadcastCopiesRootsValuesToEveryRank) {
  distributed::Comm& c = distributed::Comm::world();
  Tensor t = Tensor::from_vector(std::vector<float>{float(c.rank()), 1.5f, float(c.rank() * 3)}, {3});
  c.broadcast(t);
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{0, 1.5, 0}));
  std::string s = c.is_root() ? std::string(5000, 'x') + "end" : "other";
  c.broadcast(s);
  EXPECT_EQ(s.size(), 5003u);
  EXPECT_EQ(s.substr(4998), "xxend");
}

TEST(Distributed, AllreduceSumsDoublesAndFloats) {
  distributed::Comm& c = distributed::Comm::world();
  double d[2] = {1.0, double(c.rank())};
  c.allreduce_sum(d, 2);
  const int n = c.size();
  EXPECT_EQ(d[0], n);
  EXPECT_EQ(d[1], n * (n - 1) / 2.0);
  std::vector<float> f(100, 0.5f);
  c.allreduce_sum(f.data(), int64_t(f.size()));
  EXPECT_EQ(f[99], 0.5f * float(n));
  c.barrier();
  EXPECT_NE(c.describe(c.rank()).find("rank " + std::to_string(c.rank()) + " (pid "), std::string::npos);
}

// A peer that is slow (here: rank 1 sleeps 2.5 s before the collective, as rank 0 does while it
// writes a checkpoint) keeps sending heartbeats, so a 1 s timeout does not end the wait; a
// deadline on the collective alone would have.
TEST(Distributed, ASlowPeerDoesNotTripTheTimeout) {
  distributed::Comm& c = distributed::Comm::world();
  int calls = 0;
  distributed::CommTimeout timeout(c, 1.0, [&] { return "at test step " + std::to_string(++calls); });
  EXPECT_EQ(c.timeout(), 1.0);
  if (c.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  double x = 1;
  EXPECT_NO_THROW(c.allreduce_sum(&x, 1));
  EXPECT_EQ(x, c.size());
  EXPECT_EQ(calls, 0);  // where() is asked only for a message
}

// The seconds a Ctrl-C on mpirun leaves the ranks before SIGKILL (rank 0 compares a step with it).
TEST(Distributed, MpirunKillTimeoutIsOpenMpisDefaultUnlessGiven) {
  EXPECT_EQ(distributed::Comm::single().mpirun_kill_timeout_seconds(), 0.0);  // no mpirun, no timeout
  distributed::Comm& c = distributed::Comm::world();
  if (!c.distributed()) return;
  ASSERT_EQ(std::getenv("OMPI_MCA_odls_base_sigkill_timeout"), nullptr) << "mpi.unit_tests gives mpirun no timeout";
  EXPECT_EQ(c.mpirun_kill_timeout_seconds(), 1.0);
  setenv("OMPI_MCA_odls_base_sigkill_timeout", "32", 1);  // what `mpirun --mca ... 32` passes on
  EXPECT_EQ(c.mpirun_kill_timeout_seconds(), 32.0);
  unsetenv("OMPI_MCA_odls_base_sigkill_timeout");
}

}  // namespace
}  // namespace ag::train
